/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Runtime parameters. All of them are defined in iwarp_params_define() so
 * that `fi_info -e` lists every FI_IWARP_* variable with its default;
 * their values are read once when the provider is loaded.
 */
#include "iwarp.h"
#include "iwarp/engine.h"
#include "iwarp_rdm.h"

#include <stdlib.h>
#include <string.h>

struct iwarp_params iwarp_params = {
	.iface = NULL,
	.allow_rxm = 0,
	.rdm_unexp_max = IWARP_RDM_UNEXP_MAX_DEFAULT,
	.rfc7306 = 1,
	.rdm_eager = IWARP_RDM_EAGER_DEFAULT,
	.rdm_eager_idle = IWARP_RDM_EAGER_IDLE_DEFAULT,
	.mpa_rev = 2,
	.rdm_probe_ms = IWARP_RDM_PROBE_MS_DEFAULT,
	.bind_progress = 1,
	.shm = 1,
	.spin_us = IWARP_SPIN_US_DEFAULT,
	.idle_yield = IWARP_IDLE_YIELD_DEFAULT,
	.ready_min = IWARP_READY_MIN_DEFAULT,
};

static void iwarp_params_define(void)
{
	fi_param_define(&iwarp_prov, "iface", FI_PARAM_STRING,
			"Network interface to use, e.g. eth0 or lo "
			"(default: every interface that is up and has an "
			"IPv4 or IPv6 address)");
	fi_param_define(&iwarp_prov, "allow_rxm", FI_PARAM_BOOL,
			"Let the ofi_rxm utility provider layer over iwarp, "
			"e.g. for comparison runs; otherwise iwarp;ofi_rxm "
			"would be listed before the native RDM endpoint "
			"(default: false)");
	fi_param_define(&iwarp_prov, "rdm_unexp_max", FI_PARAM_SIZE_T,
			"Octets of unexpected RDM messages an endpoint stores "
			"before it stops returning credits for more; they "
			"come back as the stored messages are received "
			"(default: 268435456)");
	fi_param_define(&iwarp_prov, "rdm_eager", FI_PARAM_SIZE_T,
			"Largest RDM message sent eagerly, in one trip, "
			"rather than by rendezvous (an RDMA Read of the "
			"sender's buffer); at most 1048576 (default: 65536)");
	fi_param_define(&iwarp_prov, "rdm_eager_idle", FI_PARAM_SIZE_T,
			"Largest RDM message sent eagerly to a peer reached "
			"over TCP that has no message of ours outstanding "
			"(a ping-pong): the payload follows the header at "
			"once instead of waiting a round trip for the Read. "
			"A stream of messages still goes by rendezvous; at "
			"most 1048576, 0: off (default: 1048576)");
	fi_param_define(&iwarp_prov, "rdm_read_window", FI_PARAM_SIZE_T,
			"Octets of rendezvous Reads (of 512 KiB at most) an "
			"RDM endpoint has outstanding to one peer over TCP; "
			"four Reads are let out whatever it is; between "
			"131072 and 67108864 (default: 524288 to a peer on "
			"this host, 2097152 to others)");
	fi_param_define(&iwarp_prov, "crc", FI_PARAM_BOOL,
			"Ask every peer for the MPA CRC32c (RFC 5044); "
			"otherwise it is used only when the peer asks "
			"(default: false)");
	fi_param_define(&iwarp_prov, "rfc7306", FI_PARAM_BOOL,
			"Carry 64-bit fetch-add and compare-swap style RDM "
			"atomics as RFC 7306 Atomic Requests with peers that "
			"offer them too; otherwise the peer's provider runs "
			"every atomic from an RDM message (default: true)");
	fi_param_define(&iwarp_prov, "mr_app_keys", FI_PARAM_BOOL,
			"Take the application's memory registration keys, as "
			"FI_MR_SCALABLE, also when it offers FI_MR_PROV_KEY "
			"(a key asked for again is refused) (default: false: "
			"provider keys, where a free key asked for is taken "
			"and key 0 asks for a random one)");
	fi_param_define(&iwarp_prov, "mpa_rev", FI_PARAM_INT,
			"MPA revision a MSG endpoint asks for when it "
			"connects: 2 (RFC 6581 enhanced, peer-to-peer) or 1 "
			"(RFC 5044, the initiator sends first) (default: 2)");
	fi_param_define(&iwarp_prov, "rtr", FI_PARAM_STRING,
			"RTR types a MSG endpoint offers when it connects "
			"and accepts when it is connected to, any of write, "
			"read, send separated by commas; a responder picks "
			"in that order (default: write,read,send)");
}

/* Connection setup: keys, RTR timing, probes, listeners. */
static void iwarp_params_define_conn(void)
{
	fi_param_define(&iwarp_prov, "auth_key", FI_PARAM_STRING,
			"The job's key: when set, every MSG and RDM "
			"connection proves that both ends hold it (an "
			"HMAC-SHA256 challenge-response over fresh nonces) "
			"before any data is accepted; an endpoint's or "
			"domain's auth_key takes precedence (default: none)");
	fi_param_define(&iwarp_prov, "rtr_delay_ms", FI_PARAM_INT,
			"Milliseconds a connecting MSG endpoint waits after "
			"the MPA Reply before its first FPDU (the RTR, or the "
			"first message without one): Linux siw misses FPDUs "
			"that arrive right behind its Reply (default: 0)");
	fi_param_define(&iwarp_prov, "shm", FI_PARAM_BOOL,
			"Carry RDM traffic with peers in the same boot and "
			"network namespace through shared memory (rings in "
			"/dev/shm, process_vm_readv/writev); otherwise every "
			"peer is reached over TCP (default: true)");
	fi_param_define(&iwarp_prov, "spin_us", FI_PARAM_INT,
			"Microseconds a blocking wait (fi_cq_sread, "
			"fi_cntr_wait, fi_eq_sread, fi_wait) keeps polling "
			"before it sleeps: what arrives sooner costs neither "
			"side a wakeup; 0..10000 (default: 100)");
	fi_param_define(&iwarp_prov, "idle_yield", FI_PARAM_INT,
			"Empty fi_cq_read calls in a row after which every "
			"16th empty one yields the processor (sched_yield): "
			"a caller spinning on a CQ, such as Open MPI's "
			"blocking send, lets a peer that shares its core run; "
			"0 never yields (default: 256)");
	fi_param_define(&iwarp_prov, "ready_min", FI_PARAM_INT,
			"Sockets in a fabric from which progress asks an "
			"epoll set which are ready, rather than polling each "
			"on every call (a rank with many peers); 0 never "
			"(default: 8)");
	fi_param_define(&iwarp_prov, "rdm_probe_ms", FI_PARAM_INT,
			"Milliseconds an RDM endpoint waits for a live peer "
			"connection to answer a probe before a request "
			"claiming that the peer restarted may replace it "
			"(without a job key; 100..9000, default: 2000)");
	fi_param_define(&iwarp_prov, "listen_pending", FI_PARAM_SIZE_T,
			"Connections a listener (passive or RDM endpoint) "
			"holds before they are decided: still sending their "
			"MPA Request, or offered; at the cap the oldest "
			"without a complete Request is closed; 1..65536 "
			"(default: 256)");
	fi_param_define(&iwarp_prov, "mpa_timeout_ms", FI_PARAM_INT,
			"Milliseconds a connection to a listener has to send "
			"its whole MPA Request before it is closed; "
			"100..60000 (default: 5000)");
}

/* NIC locality: fi_info->nic, the order of entries, the progress thread. */
static void iwarp_params_define_nic(void)
{
	fi_param_define(&iwarp_prov, "bind_progress", FI_PARAM_BOOL,
			"Run the progress thread (which serves RMA and "
			"atomics aimed at an RDM endpoint) on the CPUs of "
			"its NIC's NUMA node, as hwloc reports it; nothing "
			"happens for a NIC hwloc does not place (virtual "
			"interfaces) (default: true)");
	fi_param_define(&iwarp_prov, "sysfs_root", FI_PARAM_STRING,
			"Directory read instead of /sys for the NIC facts of "
			"fi_info->nic and the PCI address hwloc is asked "
			"about; for tests (default: /sys)");
	fi_param_define(&iwarp_prov, "hwloc_xml", FI_PARAM_STRING,
			"hwloc XML topology used instead of this machine's "
			"for NIC locality; for tests (default: none)");
}

/* A string parameter, copied; 0 or -FI_ENOMEM. */
static int iwarp_param_str(const char *name, char **dst)
{
	char *val = NULL;

	if (fi_param_get_str(&iwarp_prov, name, &val) || !val || !*val)
		return 0;
	*dst = strdup(val);
	return *dst ? 0 : -FI_ENOMEM;
}

static int iwarp_params_read_nic(void)
{
	int val;

	if (!fi_param_get_bool(&iwarp_prov, "bind_progress", &val))
		iwarp_params.bind_progress = val;
	if (iwarp_param_str("sysfs_root", &iwarp_params.sysfs_root))
		return -FI_ENOMEM;
	return iwarp_param_str("hwloc_xml", &iwarp_params.hwloc_xml);
}

/* An integer parameter within [lo, hi]; a value outside is named and
 * ignored. */
static void iwarp_param_range(const char *name, const char *env, int lo,
			      int hi, int *dst)
{
	int val;

	if (fi_param_get_int(&iwarp_prov, name, &val))
		return;
	if (val >= lo && val <= hi)
		*dst = val;
	else
		FI_WARN(&iwarp_prov, FI_LOG_CORE, "%s=%d ignored (%d..%d)\n",
			env, val, lo, hi);
}

/* FI_IWARP_LISTEN_PENDING and FI_IWARP_MPA_TIMEOUT_MS, handed to the
 * engine for every listener. */
static void iwarp_params_listen(void)
{
	size_t n;

	if (!fi_param_get_size_t(&iwarp_prov, "listen_pending", &n)) {
		if (n >= 1 && n <= 65536)
			iwarp_params.listen_pending = n;
		else
			FI_WARN(&iwarp_prov, FI_LOG_CORE,
				"FI_IWARP_LISTEN_PENDING=%zu ignored "
				"(1..65536)\n", n);
	}
	iwarp_param_range("mpa_timeout_ms", "FI_IWARP_MPA_TIMEOUT_MS", 100,
			  60000, &iwarp_params.mpa_timeout_ms);
	iw_listen_set_defaults((uint32_t)iwarp_params.listen_pending,
			       (uint32_t)iwarp_params.mpa_timeout_ms);
}

/* "write,read" -> IW_RTR_WRITE | IW_RTR_READ; -1 for an unknown word */
static int iwarp_params_rtr(const char *s)
{
	static const struct {
		const char *name;
		int bit;
	} names[] = {
		{ "write", IW_RTR_WRITE },
		{ "read", IW_RTR_READ },
		{ "send", IW_RTR_SEND },
	};
	int bits = 0;

	while (*s) {
		size_t len = strcspn(s, ","), i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (len == strlen(names[i].name) &&
			    !strncmp(s, names[i].name, len))
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return -1;
		bits |= names[i].bit;
		s += len + (s[len] == ',');
	}
	return bits;
}

/* 0 (the default) or within its bounds; a value outside is named and
 * brought inside. */
static void iwarp_params_read_window(void)
{
	size_t w = 0;

	if (fi_param_get_size_t(&iwarp_prov, "rdm_read_window", &w) || !w)
		return;
	if (w < IWARP_RDM_READ_WINDOW_MIN || w > IWARP_RDM_READ_WINDOW_MAX) {
		size_t v = w < IWARP_RDM_READ_WINDOW_MIN ?
				   IWARP_RDM_READ_WINDOW_MIN :
				   IWARP_RDM_READ_WINDOW_MAX;

		FI_WARN(&iwarp_prov, FI_LOG_CORE,
			"FI_IWARP_RDM_READ_WINDOW=%zu out of range [%zu, "
			"%zu]: %zu\n", w, (size_t)IWARP_RDM_READ_WINDOW_MIN,
			(size_t)IWARP_RDM_READ_WINDOW_MAX, v);
		w = v;
	}
	iwarp_params.rdm_read_window = w;
}

/* Returns 0, or -FI_ENOMEM. */
static int iwarp_params_read(void)
{
	char *iface = NULL, *rtr = NULL;
	int allow, val;

	if (!fi_param_get_str(&iwarp_prov, "iface", &iface) && iface &&
	    *iface) {
		iwarp_params.iface = strdup(iface);
		if (!iwarp_params.iface)
			return -FI_ENOMEM;
	}
	if (!fi_param_get_bool(&iwarp_prov, "allow_rxm", &allow))
		iwarp_params.allow_rxm = allow;
	fi_param_get_size_t(&iwarp_prov, "rdm_unexp_max",
			    &iwarp_params.rdm_unexp_max);
	fi_param_get_size_t(&iwarp_prov, "rdm_eager", &iwarp_params.rdm_eager);
	if (iwarp_params.rdm_eager > IWARP_RDM_EAGER_MAX)
		iwarp_params.rdm_eager = IWARP_RDM_EAGER_MAX;
	fi_param_get_size_t(&iwarp_prov, "rdm_eager_idle",
			    &iwarp_params.rdm_eager_idle);
	if (iwarp_params.rdm_eager_idle > IWARP_RDM_EAGER_MAX)
		iwarp_params.rdm_eager_idle = IWARP_RDM_EAGER_MAX;
	iwarp_params_read_window();
	if (!fi_param_get_bool(&iwarp_prov, "crc", &allow))
		iwarp_params.crc = allow;
	if (!fi_param_get_bool(&iwarp_prov, "rfc7306", &allow))
		iwarp_params.rfc7306 = allow;
	if (!fi_param_get_bool(&iwarp_prov, "mr_app_keys", &allow))
		iwarp_params.mr_app_keys = allow;
	if (!fi_param_get_bool(&iwarp_prov, "shm", &allow))
		iwarp_params.shm = allow;
	if (!fi_param_get_int(&iwarp_prov, "mpa_rev", &val)) {
		if (val == 1 || val == 2)
			iwarp_params.mpa_rev = val;
		else
			FI_WARN(&iwarp_prov, FI_LOG_CORE,
				"FI_IWARP_MPA_REV=%d ignored (1 or 2)\n", val);
	}
	if (!fi_param_get_str(&iwarp_prov, "rtr", &rtr) && rtr && *rtr) {
		val = iwarp_params_rtr(rtr);
		if (val > 0)
			iwarp_params.rtr = (unsigned int)val;
		else
			FI_WARN(&iwarp_prov, FI_LOG_CORE,
				"FI_IWARP_RTR=%s ignored\n", rtr);
	}
	iwarp_param_range("rtr_delay_ms", "FI_IWARP_RTR_DELAY_MS", 0, 60000,
			  &iwarp_params.rtr_delay_ms);
	iwarp_params_listen();
	/* below the 10 s a held MPA Request may wait for its Reply */
	iwarp_param_range("rdm_probe_ms", "FI_IWARP_RDM_PROBE_MS", 100, 9000,
			  &iwarp_params.rdm_probe_ms);
	iwarp_param_range("spin_us", "FI_IWARP_SPIN_US", 0, 10000,
			  &iwarp_params.spin_us);
	iwarp_param_range("idle_yield", "FI_IWARP_IDLE_YIELD", 0, 1000000,
			  &iwarp_params.idle_yield);
	iwarp_param_range("ready_min", "FI_IWARP_READY_MIN", 0, 1000000,
			  &iwarp_params.ready_min);
	return 0;
}

/* The job key; never logged. 0 or -FI_ENOMEM. */
static int iwarp_params_read_auth(void)
{
	char *key = NULL;

	if (fi_param_get_str(&iwarp_prov, "auth_key", &key) || !key || !*key)
		return 0;
	iwarp_params.auth_key = strdup(key);
	if (!iwarp_params.auth_key)
		return -FI_ENOMEM;
	FI_INFO(&iwarp_prov, FI_LOG_CORE,
		"job key set (%zu octets): connections authenticate\n",
		strlen(key));
	return 0;
}

int iwarp_params_init(void)
{
	int ret;

	iwarp_params_define();
	iwarp_params_define_conn();
	iwarp_params_define_nic();
	ret = iwarp_params_read();
	if (!ret)
		ret = iwarp_params_read_auth();
	if (!ret)
		ret = iwarp_params_read_nic();
	if (ret) {
		FI_WARN(&iwarp_prov, FI_LOG_CORE,
			"cannot read parameters: %s\n", fi_strerror(-ret));
		return ret;
	}
	if (iwarp_params.iface)
		FI_INFO(&iwarp_prov, FI_LOG_CORE,
			"restricted to interface %s\n", iwarp_params.iface);
	return 0;
}

void iwarp_params_fini(void)
{
	free(iwarp_params.iface);
	iwarp_params.iface = NULL;
	free(iwarp_params.auth_key);
	iwarp_params.auth_key = NULL;
	iwarp_params.allow_rxm = 0;
	iwarp_params.rdm_unexp_max = IWARP_RDM_UNEXP_MAX_DEFAULT;
	iwarp_params.crc = 0;
	iwarp_params.rfc7306 = 1;
	iwarp_params.mr_app_keys = 0;
	iwarp_params.mpa_rev = 2;
	iwarp_params.rtr = 0;
	iwarp_params.rtr_delay_ms = 0;
	iwarp_params.listen_pending = 0;
	iwarp_params.mpa_timeout_ms = 0;
	iw_listen_set_defaults(0, 0);
	iwarp_params.rdm_probe_ms = IWARP_RDM_PROBE_MS_DEFAULT;
	iwarp_params.bind_progress = 1;
	free(iwarp_params.sysfs_root);
	iwarp_params.sysfs_root = NULL;
	free(iwarp_params.hwloc_xml);
	iwarp_params.hwloc_xml = NULL;
	iwarp_params.shm = 1;
	iwarp_params.spin_us = IWARP_SPIN_US_DEFAULT;
	iwarp_params.idle_yield = IWARP_IDLE_YIELD_DEFAULT;
	iwarp_params.ready_min = IWARP_READY_MIN_DEFAULT;
}

void iwarp_engine_log(void *arg, int level, const char *msg)
{
	enum fi_log_subsys sub = level & IW_LOG_DATA ? FI_LOG_EP_DATA :
						       FI_LOG_EP_CTRL;

	(void)arg;
	switch (level & IW_LOG_LEVEL_MASK) {
	case IW_LOG_WARN:
		FI_WARN(&iwarp_prov, sub, "%s\n", msg);
		break;
	case IW_LOG_INFO:
		FI_INFO(&iwarp_prov, sub, "%s\n", msg);
		break;
	default:
		FI_DBG(&iwarp_prov, sub, "%s\n", msg);
		break;
	}
}

int iwarp_engine_log_max(void)
{
	enum fi_log_level l[] = { FI_LOG_DEBUG, FI_LOG_INFO };
	int max[] = { IW_LOG_DEBUG, IW_LOG_INFO };
	size_t i;

	for (i = 0; i < 2; i++)
		if (fi_log_enabled(&iwarp_prov, l[i], FI_LOG_EP_CTRL) ||
		    fi_log_enabled(&iwarp_prov, l[i], FI_LOG_EP_DATA))
			return max[i];
	return IW_LOG_WARN;
}

/* The label only when the line goes out: it costs two syscalls on the
 * way to FI_CONNECTED. */
void iwarp_log_connected(const char *what, struct iw_qp *qp,
			 const struct iw_cm_event *ev)
{
	const char *label;

	if (!fi_log_enabled(&iwarp_prov, FI_LOG_INFO, FI_LOG_EP_CTRL))
		return;
	label = qp ? iw_qp_label(qp) : NULL;
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"%s connected: MPA rev %u%s, CRC %s, markers rx %s tx %s, "
		"MULPDU %u, IRD %u ORD %u, RTR %#x%s%s\n", what, ev->rev,
		ev->enhanced ? " enhanced" : "", ev->crc ? "on" : "off",
		ev->markers_rx ? "on" : "off", ev->markers_tx ? "on" : "off",
		ev->mulpdu, ev->ird, ev->ord, ev->rtr_used,
		label ? " on " : "", label ? label : "");
}

void iwarp_log_established(const char *what, const struct iw_cm_event *ev)
{
	iwarp_log_connected(what, NULL, ev);
}

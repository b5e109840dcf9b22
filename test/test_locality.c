/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NIC locality through the public API, on a host described by fixtures:
 * the hwloc topology of test/fixtures/topo-2socket-2nic.xml (two
 * sockets, CPUs 0,2 and 1,3, NIC fxnic0 on socket 0 and fxnic1 on
 * socket 1; FI_IWARP_HWLOC_XML) and a sysfs tree written here
 * (FI_IWARP_SYSFS_ROOT) giving the NICs their PCI functions, ids and
 * links. The interfaces themselves are dummies (or veths) with 10.81.x.1
 * in a network namespace of this process's own (unshare: needs root).
 *
 * Checks fi_info->nic against the sysfs tree, fi_dupinfo/fi_freeinfo
 * of it (leaks show under ASan), fi_tostr of it, the order of the
 * entries as this thread's CPU binding moves between the sockets, and
 * the CPUs of the progress thread an RDM endpoint with FI_RMA starts
 * (Cpus_allowed_list of the new task): its NIC's socket, the creator's
 * for lo, and the creator's with FI_IWARP_BIND_PROGRESS=0 (a child);
 * and (another child) hwloc's own HWLOC_XMLFILE instead of ours.
 * The host needs CPUs 0 and 1 (the fixture's 2 and 3 need not exist).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <ftw.h>
#include <sched.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "tap.h"
#include "fi_api.h"

#define PLAN		19
#define MAX_TASKS	64

extern char **environ;

static char root[] = "/tmp/iwarp-locality.XXXXXX";
static cpu_set_t all_cpus;	/* this process's CPUs at start */

/* ---- the host: dummies in a namespace of our own, a sysfs tree */

static int run(const char *const argv[])
{
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, (char *const *)argv,
			 environ))
		return -1;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

#define IP(...) run((const char *const[]){ "ip", __VA_ARGS__, NULL })

/* A dummy interface, or where the kernel has no dummy module, one end
 * of a veth pair (the other end up, without an address). */
static int make_nic(const char *name, const char *addr)
{
	char peer[IF_NAMESIZE];

	snprintf(peer, sizeof(peer), "%sp", name);
	if (IP("link", "add", name, "type", "dummy") &&
	    (IP("link", "add", name, "type", "veth", "peer", "name", peer) ||
	     IP("link", "set", peer, "up")))
		return -1;
	if (IP("addr", "add", addr, "dev", name))
		return -1;
	return IP("link", "set", name, "up");
}

static int make_netns(void)
{
	if (unshare(CLONE_NEWNET)) {
		tap_diag("unshare(CLONE_NEWNET): %s", strerror(errno));
		return -1;
	}
	if (IP("link", "set", "lo", "up"))
		return -1;
	/* created in this order: the kernel lists fxnic0 first */
	if (make_nic("fxnic0", "10.81.0.1/24"))
		return -1;
	return make_nic("fxnic1", "10.81.1.1/24");
}

static int mkdirs(const char *rel)
{
	char path[512], *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(path, 0755) && errno != EEXIST ? -1 : 0;
}

static int put(const char *dir, const char *file, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", root, dir, file);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", text);
	return fclose(f);
}

static int link_to(const char *dir, const char *file, const char *target)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s/%s", root, dir, file);
	return symlink(target, path);
}

struct fake_nic {
	const char *name, *pci_dir, *vendor, *device, *revision, *driver;
	const char *address, *mtu, *speed, *carrier;
};

/* The NICs as sysfs shows them; fxnic1's revision is garbage. */
static const struct fake_nic nics[] = {
	{ "fxnic0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0",
	  "0x8086", "0x1593", "0x02", "ice", "02:00:00:00:3b:00", "9000",
	  "100000", "1" },
	{ "fxnic1", "devices/pci0000:ae/0000:ae:00.0/0000:af:00.0",
	  "0x15b3", "0x1017", "rev A", "mlx5_core", "02:00:00:00:af:00",
	  "4200", "-1", "0" },
};

static int fake_nic(const struct fake_nic *n)
{
	char net[64], drv[64], target[256];

	snprintf(net, sizeof(net), "class/net/%s", n->name);
	snprintf(drv, sizeof(drv), "bus/pci/drivers/%s", n->driver);
	snprintf(target, sizeof(target), "../../../%s", n->pci_dir);
	if (mkdirs(net) || mkdirs(drv) || mkdirs(n->pci_dir) ||
	    put(n->pci_dir, "vendor", n->vendor) ||
	    put(n->pci_dir, "device", n->device) ||
	    put(n->pci_dir, "revision", n->revision) ||
	    put(net, "address", n->address) || put(net, "mtu", n->mtu) ||
	    put(net, "speed", n->speed) || put(net, "carrier", n->carrier) ||
	    put(net, "type", "1") || link_to(net, "device", target))
		return -1;
	/* device/driver -> bus/pci/drivers/NAME, as the kernel links it */
	snprintf(target, sizeof(target), "../../../../%s", drv);
	return link_to(n->pci_dir, "driver", target);
}

static int make_sysfs(void)
{
	size_t i;

	if (!mkdtemp(root))
		return -1;
	for (i = 0; i < sizeof(nics) / sizeof(nics[0]); i++)
		if (fake_nic(&nics[i]))
			return -1;
	if (mkdirs("class/net/lo") || put("class/net/lo", "mtu", "65536") ||
	    put("class/net/lo", "address", "00:00:00:00:00:00") ||
	    put("class/net/lo", "type", "772") ||
	    put("class/net/lo", "carrier", "1"))
		return -1;
	setenv("FI_IWARP_SYSFS_ROOT", root, 1);
	setenv("FI_IWARP_HWLOC_XML", TEST_FIXTURES "/topo-2socket-2nic.xml",
	       1);
	unsetenv("FI_IWARP_IFACE");
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

/* ---- fi_getinfo */

static struct fi_info *getinfo(enum fi_ep_type type, const char *domain)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	hints->fabric_attr->prov_name = strdup("iwarp");
	hints->addr_format = FI_SOCKADDR_IN;
	hints->ep_attr->type = type;
	if (domain) {
		hints->domain_attr->name = strdup(domain);
		hints->caps = FI_MSG | FI_RMA;
		hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR |
					      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	}
	if (fi_getinfo(TEST_API, NULL, NULL, 0, hints, &info))
		info = NULL;
	fi_freeinfo(hints);
	return info;
}

static const struct fi_info *find(const struct fi_info *info,
				  const char *domain)
{
	for (; info; info = info->next)
		if (!strcmp(info->domain_attr->name, domain))
			return info;
	return NULL;
}

static bool str_is(const char *got, const char *want)
{
	if (!got || !want)
		return got == want;
	return !strcmp(got, want);
}

static void check_device(const struct fi_info *fi, const struct fake_nic *n,
			 const char *version)
{
	const struct fi_device_attr *d = fi->nic->device_attr;

	tap_ok(str_is(d->name, n->name) && str_is(d->vendor_id, n->vendor) &&
	       str_is(d->device_id, n->device) &&
	       str_is(d->device_version, version) &&
	       str_is(d->driver, n->driver),
	       "%s: device %s vendor %s id %s version %s driver %s", n->name,
	       d->name, d->vendor_id, d->device_id, d->device_version,
	       d->driver);
}

static void check_bus(const struct fi_info *fi, const char *name,
		      unsigned int bus)
{
	const struct fi_bus_attr *b = fi->nic->bus_attr;
	const struct fi_pci_attr *p = &b->attr.pci;

	tap_ok(b->bus_type == FI_BUS_PCI && p->domain_id == 0 &&
	       p->bus_id == bus && p->device_id == 0 && p->function_id == 0,
	       "%s: PCI %04x:%02x:%02x.%x (bus type %d)", name, p->domain_id,
	       p->bus_id, p->device_id, p->function_id, b->bus_type);
}

static void check_link(const struct fi_info *fi, const char *name,
		       const char *address, size_t mtu, size_t speed,
		       enum fi_link_state state, const char *type)
{
	const struct fi_link_attr *l = fi->nic->link_attr;

	tap_ok(str_is(l->address, address) && l->mtu == mtu &&
	       l->speed == speed && l->state == state &&
	       str_is(l->network_type, type),
	       "%s: link %s mtu %zu speed %zu state %d type %s", name,
	       l->address, l->mtu, l->speed, l->state, l->network_type);
}

static bool pci_same(const struct fi_bus_attr *a, const struct fi_bus_attr *b)
{
	const struct fi_pci_attr *p = &a->attr.pci, *q = &b->attr.pci;

	return a->bus_type == b->bus_type &&
	       (a->bus_type != FI_BUS_PCI ||
		(p->domain_id == q->domain_id && p->bus_id == q->bus_id &&
		 p->device_id == q->device_id &&
		 p->function_id == q->function_id));
}

static bool nic_same(const struct fid_nic *a, const struct fid_nic *b)
{
	const struct fi_device_attr *da = a->device_attr, *db = b->device_attr;
	const struct fi_link_attr *la = a->link_attr, *lb = b->link_attr;

	return a != b && da != db && la != lb && a->bus_attr != b->bus_attr &&
	       str_is(da->name, db->name) &&
	       (!da->name || da->name != db->name) &&
	       str_is(da->vendor_id, db->vendor_id) &&
	       str_is(da->device_id, db->device_id) &&
	       str_is(da->device_version, db->device_version) &&
	       str_is(da->driver, db->driver) &&
	       pci_same(a->bus_attr, b->bus_attr) &&
	       str_is(la->address, lb->address) &&
	       (!la->address || la->address != lb->address) &&
	       str_is(la->network_type, lb->network_type) &&
	       la->mtu == lb->mtu && la->speed == lb->speed &&
	       la->state == lb->state;
}

/* Every entry names its interface in nic, and survives fi_dupinfo. */
static void check_every_entry(struct fi_info *info)
{
	struct fi_info *fi, *dup;
	int named = 0, copied = 0, n = 0;

	for (fi = info; fi; fi = fi->next, n++) {
		if (fi->nic && fi->nic->device_attr &&
		    str_is(fi->nic->device_attr->name, fi->domain_attr->name))
			named++;
		dup = fi_dupinfo(fi);
		if (dup && dup->nic && fi->nic && nic_same(fi->nic, dup->nic))
			copied++;
		fi_freeinfo(dup);
	}
	tap_ok(n > 0 && named == n, "every entry has a nic named after its "
	       "domain (%d of %d)", named, n);
	tap_ok(n > 0 && copied == n, "fi_dupinfo copies every nic deeply "
	       "(%d of %d)", copied, n);
}

static void check_nic_fields(void)
{
	struct fi_info *info = getinfo(FI_EP_RDM, NULL);
	const struct fi_info *f0 = find(info, "fxnic0");
	const struct fi_info *f1 = find(info, "fxnic1");
	const struct fi_info *lo = find(info, "lo");
	const char *s;

	check_every_entry(info);
	if (!tap_ok(f0 && f1 && lo && f0->nic && f1->nic && lo->nic,
		    "fi_getinfo lists fxnic0, fxnic1 and lo with a nic")) {
		tap_skip_n(8, "no entries to look at");
		fi_freeinfo(info);
		return;
	}
	check_device(f0, &nics[0], "0x02");
	check_bus(f0, "fxnic0", 0x3b);
	check_link(f0, "fxnic0", nics[0].address, 9000, 100000000000ULL,
		   FI_LINK_UP, "Ethernet");
	check_device(f1, &nics[1], NULL);
	check_bus(f1, "fxnic1", 0xaf);
	check_link(f1, "fxnic1", nics[1].address, 4200, 0, FI_LINK_DOWN,
		   "Ethernet");
	tap_ok(lo->nic->bus_attr->bus_type == FI_BUS_UNKNOWN &&
	       !lo->nic->device_attr->vendor_id &&
	       !lo->nic->device_attr->driver &&
	       lo->nic->link_attr->mtu == 65536 &&
	       str_is(lo->nic->link_attr->network_type, "Loopback"),
	       "lo: no bus, no device ids, mtu 65536, Loopback");
	s = fi_tostr(f1, FI_TYPE_INFO);
	tap_ok(s && strstr(s, "bus_type: FI_BUS_PCI") &&
	       strstr(s, "bus_id: 175") && strstr(s, "state: FI_LINK_DOWN") &&
	       strstr(s, "driver: mlx5_core"),
	       "fi_tostr shows fxnic1's nic");
	fi_freeinfo(info);
}

/* ---- order and placement */

static int bind_cpus(int a, int b)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(a, &set);
	if (b >= 0)
		CPU_SET(b, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Per endpoint type, the IPv4 entries: `first` before `second`, and no
 * lo entry before any other. */
static bool order_is(const char *first, const char *second)
{
	struct fi_info *info = getinfo(FI_EP_UNSPEC, NULL), *fi;
	bool ok = info != NULL, lo_seen = false;
	enum fi_ep_type type = FI_EP_UNSPEC;
	int pos = 0;

	for (fi = info; fi && ok; fi = fi->next) {
		const char *d = fi->domain_attr->name;

		if (!strcmp(d, "lo")) {
			lo_seen = true;
			continue;
		}
		ok = !lo_seen;
		if (fi->ep_attr->type != type) {
			type = fi->ep_attr->type;
			pos = 0;
		}
		if (!strcmp(d, pos++ ? second : first))
			continue;
		tap_diag("type %d: %s at %d", type, d, pos - 1);
		ok = false;
	}
	fi_freeinfo(info);
	return ok && lo_seen;
}

static int tasks(pid_t *tids, int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max)
		if (e->d_name[0] != '.')
			tids[n++] = atoi(e->d_name);
	closedir(d);
	return n;
}

/* Cpus_allowed_list of task tid into buf. */
static bool task_cpus(pid_t tid, char *buf, size_t size)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Cpus_allowed_list:", 18)) {
			snprintf(buf, size, "%s", line + 18 + strspn(line + 18,
								      " \t"));
			buf[strcspn(buf, "\n")] = '\0';
			found = true;
		}
	fclose(f);
	return found;
}

/* "1,3" of the fixture as the kernel keeps it: the CPUs that exist. */
static void cpu_list(const int *cpus, int n, char *buf, size_t size)
{
	size_t used = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n; i++)
		if (CPU_ISSET(cpus[i], &all_cpus) && used < size)
			used += snprintf(buf + used, size - used, "%s%d",
					 used ? "," : "", cpus[i]);
}

struct rdm {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

/* An enabled RDM endpoint with FI_RMA on `domain`: it starts the
 * progress thread of its fabric. */
static int rdm_open(struct rdm *r, const char *domain)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int ret;

	memset(r, 0, sizeof(*r));
	r->info = getinfo(FI_EP_RDM, domain);
	if (!r->info)
		return -FI_ENODATA;
	ret = fi_fabric(r->info->fabric_attr, &r->fabric, NULL);
	if (!ret)
		ret = fi_domain(r->fabric, r->info, &r->domain, NULL);
	if (!ret)
		ret = fi_endpoint(r->domain, r->info, &r->ep, NULL);
	if (!ret)
		ret = fi_cq_open(r->domain, &cq_attr, &r->cq, NULL);
	if (!ret)
		ret = fi_av_open(r->domain, &av_attr, &r->av, NULL);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->av->fid, 0);
	if (!ret)
		ret = fi_enable(r->ep);
	return ret;
}

static void rdm_close(struct rdm *r)
{
	if (r->ep)
		fi_close(&r->ep->fid);
	if (r->av)
		fi_close(&r->av->fid);
	if (r->cq)
		fi_close(&r->cq->fid);
	if (r->domain)
		fi_close(&r->domain->fid);
	if (r->fabric)
		fi_close(&r->fabric->fid);
	fi_freeinfo(r->info);
}

/*
 * Opens an RDM endpoint on `domain` and reads the CPUs of the one task
 * that appeared meanwhile (the progress thread) into buf.
 */
static bool thread_cpus(struct rdm *r, const char *domain, char *buf,
			size_t size)
{
	pid_t before[MAX_TASKS], after[MAX_TASKS], fresh = 0;
	int nb = tasks(before, MAX_TASKS), na, i, j, n = 0;
	int ret = rdm_open(r, domain);

	if (ret) {
		tap_diag("RDM endpoint on %s: %s", domain, fi_strerror(-ret));
		return false;
	}
	na = tasks(after, MAX_TASKS);
	for (i = 0; i < na; i++) {
		for (j = 0; j < nb && before[j] != after[i]; j++)
			;
		if (j == nb) {
			fresh = after[i];
			n++;
		}
	}
	if (n != 1) {
		tap_diag("%d new threads on %s", n, domain);
		return false;
	}
	return task_cpus(fresh, buf, size);
}

static void check_order(void)
{
	bool ok;

	ok = !bind_cpus(0, -1) && order_is("fxnic0", "fxnic1");
	tap_ok(ok, "bound to CPU 0 (socket 0): fxnic0 first, lo last");
	ok = !bind_cpus(1, -1) && order_is("fxnic1", "fxnic0");
	tap_ok(ok, "bound to CPU 1 (socket 1): fxnic1 first, lo last");
	ok = !bind_cpus(0, 1) && order_is("fxnic0", "fxnic1");
	tap_ok(ok, "bound to both sockets: the kernel's order, lo last");
}

static void check_placement(void)
{
	static const int s0[] = { 0, 2 }, s1[] = { 1, 3 };
	char want[64], got[64] = "";
	struct rdm r1, r0, rlo;
	bool ok;

	/* created from socket 0, placed on socket 1 */
	cpu_list(s1, 2, want, sizeof(want));
	ok = !bind_cpus(0, -1) && thread_cpus(&r1, "fxnic1", got, sizeof(got));
	tap_ok(ok && !strcmp(got, want), "progress thread of fxnic1's fabric "
	       "on CPUs %s (want %s)", got, want);
	cpu_list(s0, 2, want, sizeof(want));
	ok = !bind_cpus(1, -1) && thread_cpus(&r0, "fxnic0", got, sizeof(got));
	tap_ok(ok && !strcmp(got, want), "progress thread of fxnic0's fabric "
	       "on CPUs %s (want %s)", got, want);
	/* lo has no NIC: the thread keeps its creator's CPUs */
	ok = !bind_cpus(0, 1) && thread_cpus(&rlo, "lo", got, sizeof(got));
	tap_ok(ok && !strcmp(got, "0-1"),
	       "progress thread of lo's fabric left on its creator's CPUs "
	       "%s", got);
	rdm_close(&rlo);
	rdm_close(&r0);
	rdm_close(&r1);
}

/* The child: FI_IWARP_BIND_PROGRESS=0 leaves fxnic1's thread on CPU 0. */
static int child_nobind(void)
{
	char got[64] = "";
	struct rdm r;
	bool ok;

	ok = !bind_cpus(0, -1) && thread_cpus(&r, "fxnic1", got, sizeof(got));
	fprintf(stderr, "# FI_IWARP_BIND_PROGRESS=0: thread on CPUs %s\n",
		got);
	rdm_close(&r);
	return ok && !strcmp(got, "0") ? 0 : 1;
}

/* The child: hwloc's own HWLOC_XMLFILE serves as well. */
static int child_xmlfile(void)
{
	bool ok = !bind_cpus(1, -1) && order_is("fxnic1", "fxnic0");

	fprintf(stderr, "# HWLOC_XMLFILE: fxnic1 first from CPU 1: %s\n",
		ok ? "yes" : "no");
	return ok ? 0 : 1;
}

static pid_t spawn_self(const char *self, const char *mode)
{
	const char *argv[] = { self, mode, NULL };
	pid_t pid;

	if (posix_spawn(&pid, self, NULL, NULL, (char *const *)argv, environ))
		return -1;
	return pid;
}

static void check_children(const char *self)
{
	const char *xml = getenv("FI_IWARP_HWLOC_XML");
	pid_t pid;

	setenv("FI_IWARP_BIND_PROGRESS", "0", 1);
	pid = spawn_self(self, "nobind");
	unsetenv("FI_IWARP_BIND_PROGRESS");
	tap_child(pid, 60, "FI_IWARP_BIND_PROGRESS=0 leaves the thread on "
		  "its creator's CPU");
	setenv("HWLOC_XMLFILE", xml, 1);
	unsetenv("FI_IWARP_HWLOC_XML");
	pid = spawn_self(self, "xmlfile");
	tap_child(pid, 60, "HWLOC_XMLFILE instead of FI_IWARP_HWLOC_XML "
		  "orders the entries too");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "nobind"))
		return child_nobind();
	if (argc > 1 && !strcmp(argv[1], "xmlfile"))
		return child_xmlfile();
	sched_getaffinity(0, sizeof(all_cpus), &all_cpus);
	if (!CPU_ISSET(0, &all_cpus) || !CPU_ISSET(1, &all_cpus)) {
		tap_skip_n(PLAN, "needs CPUs 0 and 1");
		return tap_done();
	}
	if (make_netns()) {
		tap_skip_n(PLAN, "no network namespace with dummy interfaces "
			   "(needs root)");
		return tap_done();
	}
	if (make_sysfs()) {
		tap_diag("sysfs tree in %s: %s", root, strerror(errno));
		tap_skip_n(PLAN, "no sysfs tree");
		return tap_done();
	}
	check_nic_fields();
	check_order();
	check_placement();
	check_children(argv[0]);
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return tap_done();
}

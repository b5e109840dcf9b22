/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_info->nic from sysfs, as hardware providers fill it: the device
 * (class/net/IF/device: vendor, device, revision, driver), its PCI
 * function (the nearest PCI address above the device: a virtio NIC sits
 * under one), the link (address, mtu, speed in Mb/s, carrier, type).
 * Virtual interfaces (lo, veth, dummy) have no device: FI_BUS_UNKNOWN.
 *
 * The libfabric core frees info->nic through its fid's close and copies
 * it through control(FI_DUP); its own helpers for that are not exported
 * to external providers, so the ops are ours, with the same ownership:
 * every string and attribute block is malloc'ed and owned by the nic.
 */
#include "iwarp_nic.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if_arp.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "iwarp/engine.h"

static const char *iwarp_sysfs_root(void)
{
	return iwarp_params.sysfs_root ? iwarp_params.sysfs_root : "/sys";
}

/* ROOT/class/net/NAME/ATTR; false if it does not fit. */
static bool iwarp_sysfs_path(char *buf, size_t size, const char *name,
			     const char *attr)
{
	int n = snprintf(buf, size, "%s/class/net/%s/%s", iwarp_sysfs_root(),
			 name, attr);

	return n > 0 && (size_t)n < size;
}

/* The first line of an attribute; false if unreadable or empty. */
static bool iwarp_sysfs_read(const char *name, const char *attr, char *buf,
			     size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (!iwarp_sysfs_path(path, sizeof(path), name, attr))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, size - 1);
	iw_fd_close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf[0] != '\0';
}

static bool iwarp_sysfs_long(const char *name, const char *attr, long *val)
{
	char buf[32], *end;

	if (!iwarp_sysfs_read(name, attr, buf, sizeof(buf)))
		return false;
	errno = 0;
	*val = strtol(buf, &end, 10);
	return !errno && end != buf && !*end;
}

/* "0x8086": an id as sysfs prints it. */
static bool iwarp_hex_id(const char *s)
{
	size_t i, len = strlen(s);

	if (len < 3 || len > 10 || s[0] != '0' || s[1] != 'x')
		return false;
	for (i = 2; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* A link-layer address: hex octets separated by colons. */
static bool iwarp_link_addr(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!isxdigit((unsigned char)s[i]) && s[i] != ':')
			return false;
	return i > 0;
}

/* A driver's name: what a kernel module may be called. */
static bool iwarp_driver_name(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.", s[i]))
			return false;
	return i > 0;
}

/*
 * *dst = a copy of attribute `attr` if it passes `valid`; left NULL if
 * absent or malformed. 0 or -FI_ENOMEM.
 */
static int iwarp_nic_str(char **dst, const char *name, const char *attr,
			 bool (*valid)(const char *))
{
	char buf[128];

	if (!iwarp_sysfs_read(name, attr, buf, sizeof(buf)) || !valid(buf))
		return 0;
	*dst = strdup(buf);
	return *dst ? 0 : -FI_ENOMEM;
}

/* The driver bound to the device: the name of device/driver's target. */
static int iwarp_nic_driver(char **dst, const char *name)
{
	char path[PATH_MAX], link[PATH_MAX];
	const char *base;
	ssize_t n;

	if (!iwarp_sysfs_path(path, sizeof(path), name, "device/driver"))
		return 0;
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (!iwarp_driver_name(base))
		return 0;
	*dst = strdup(base);
	return *dst ? 0 : -FI_ENOMEM;
}

/* "DDDD:BB:DD.F" exactly, as a PCI function's directory is named. */
static bool iwarp_pci_name(const char *s, struct fi_pci_attr *pci)
{
	unsigned int dom, bus, dev, fn;
	size_t i;

	if (strlen(s) != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.')
		return false;
	for (i = 0; i < 12; i++)
		if (i != 4 && i != 7 && i != 10 &&
		    !isxdigit((unsigned char)s[i]))
			return false;
	if (sscanf(s, "%4x:%2x:%2x.%1x", &dom, &bus, &dev, &fn) != 4 ||
	    dev > 0x1f || fn > 7)
		return false;
	pci->domain_id = (uint16_t)dom;
	pci->bus_id = (uint8_t)bus;
	pci->device_id = (uint8_t)dev;
	pci->function_id = (uint8_t)fn;
	return true;
}

bool iwarp_nic_physical(const char *name)
{
	char path[PATH_MAX];

	return iwarp_sysfs_path(path, sizeof(path), name, "device") &&
	       !access(path, F_OK);
}

int iwarp_nic_pci(const char *name, struct fi_pci_attr *pci)
{
	char path[PATH_MAX], *real, *cut;
	int ret = -FI_ENODATA;

	if (!iwarp_sysfs_path(path, sizeof(path), name, "device"))
		return -FI_ENODATA;
	real = realpath(path, NULL);
	if (!real)
		return -FI_ENODATA;
	/* walk up .../devices/pci0000:00/0000:00:03.0/virtio2 */
	while ((cut = strrchr(real, '/')) && strcmp(cut, "/devices")) {
		if (iwarp_pci_name(cut + 1, pci)) {
			ret = 0;
			break;
		}
		*cut = '\0';
	}
	free(real);
	return ret;
}

static int iwarp_nic_device(struct fi_device_attr *dev, const char *name)
{
	int ret;

	dev->name = strdup(name);
	if (!dev->name)
		return -FI_ENOMEM;
	ret = iwarp_nic_str(&dev->vendor_id, name, "device/vendor",
			    iwarp_hex_id);
	if (!ret)
		ret = iwarp_nic_str(&dev->device_id, name, "device/device",
				    iwarp_hex_id);
	if (!ret)
		ret = iwarp_nic_str(&dev->device_version, name,
				    "device/revision", iwarp_hex_id);
	return ret ? ret : iwarp_nic_driver(&dev->driver, name);
}

/* The carrier, or failing that the operational state. */
static enum fi_link_state iwarp_nic_state(const char *name)
{
	char buf[32];
	long carrier;

	if (iwarp_sysfs_long(name, "carrier", &carrier))
		return carrier ? FI_LINK_UP : FI_LINK_DOWN;
	if (!iwarp_sysfs_read(name, "operstate", buf, sizeof(buf)))
		return FI_LINK_UNKNOWN;
	if (!strcmp(buf, "up"))
		return FI_LINK_UP;
	if (!strcmp(buf, "down") || !strcmp(buf, "lowerlayerdown"))
		return FI_LINK_DOWN;
	return FI_LINK_UNKNOWN;
}

/* The link layer (ARPHRD_* in sysfs "type"); NULL if unknown. */
static const char *iwarp_nic_net_type(const char *name)
{
	long type;

	if (!iwarp_sysfs_long(name, "type", &type))
		return NULL;
	switch (type) {
	case ARPHRD_ETHER:
		return "Ethernet";
	case ARPHRD_INFINIBAND:
		return "InfiniBand";
	case ARPHRD_LOOPBACK:
		return "Loopback";
	default:
		return NULL;
	}
}

static int iwarp_nic_link(struct fi_link_attr *link, const char *name)
{
	const char *type = iwarp_nic_net_type(name);
	long val;

	if (iwarp_sysfs_long(name, "mtu", &val) && val > 0)
		link->mtu = (size_t)val;
	/* Mb/s; -1 while the speed is unknown */
	if (iwarp_sysfs_long(name, "speed", &val) && val > 0 &&
	    (unsigned long)val <= SIZE_MAX / 1000000)
		link->speed = (size_t)val * 1000000;
	link->state = iwarp_nic_state(name);
	if (type) {
		link->network_type = strdup(type);
		if (!link->network_type)
			return -FI_ENOMEM;
	}
	return iwarp_nic_str(&link->address, name, "address", iwarp_link_addr);
}

/* ---- the fid_nic and its ops */

static void iwarp_nic_free(struct fid_nic *nic)
{
	if (nic->device_attr) {
		free(nic->device_attr->name);
		free(nic->device_attr->device_id);
		free(nic->device_attr->device_version);
		free(nic->device_attr->vendor_id);
		free(nic->device_attr->driver);
		free(nic->device_attr->firmware);
		free(nic->device_attr);
	}
	free(nic->bus_attr);
	if (nic->link_attr) {
		free(nic->link_attr->address);
		free(nic->link_attr->network_type);
		free(nic->link_attr);
	}
	free(nic);
}

static int iwarp_nic_close(struct fid *fid)
{
	iwarp_nic_free(iwarp_container_of(fid, struct fid_nic, fid));
	return 0;
}

static struct fid_nic *iwarp_nic_alloc(void);

/* *dst = a copy of src (NULL stays NULL); false on ENOMEM. */
static bool iwarp_str_copy(char **dst, const char *src)
{
	*dst = src ? strdup(src) : NULL;
	return !src || *dst;
}

static bool iwarp_nic_copy(struct fid_nic *dst, const struct fid_nic *src)
{
	const struct fi_device_attr *sd = src->device_attr;
	const struct fi_link_attr *sl = src->link_attr;
	struct fi_device_attr *dd = dst->device_attr;
	struct fi_link_attr *dl = dst->link_attr;

	if (src->bus_attr)
		*dst->bus_attr = *src->bus_attr;
	if (sl) {
		dl->mtu = sl->mtu;
		dl->speed = sl->speed;
		dl->state = sl->state;
	}
	return (!sd || (iwarp_str_copy(&dd->name, sd->name) &&
			iwarp_str_copy(&dd->device_id, sd->device_id) &&
			iwarp_str_copy(&dd->device_version,
				       sd->device_version) &&
			iwarp_str_copy(&dd->vendor_id, sd->vendor_id) &&
			iwarp_str_copy(&dd->driver, sd->driver) &&
			iwarp_str_copy(&dd->firmware, sd->firmware))) &&
	       (!sl || (iwarp_str_copy(&dl->address, sl->address) &&
			iwarp_str_copy(&dl->network_type, sl->network_type)));
}

/* FI_DUP is how fi_dupinfo copies info->nic. */
static int iwarp_nic_control(struct fid *fid, int command, void *arg)
{
	struct fid_nic *nic = iwarp_container_of(fid, struct fid_nic, fid);
	struct fid_nic *dup;

	if (command != FI_DUP)
		return -FI_ENOSYS;
	dup = iwarp_nic_alloc();
	if (!dup)
		return -FI_ENOMEM;
	dup->fid.context = nic->fid.context;
	if (!iwarp_nic_copy(dup, nic)) {
		iwarp_nic_free(dup);
		return -FI_ENOMEM;
	}
	*(struct fid_nic **)arg = dup;
	return 0;
}

/*
 * ---- fi_tostr, in libfabric's own layout. The core passes buf from
 * its start and len = the octets left after its text; taking len as the
 * size of all of buf can cut our text short when buf is nearly full but
 * never writes past it, whichever of the two a core means.
 */

#define IWARP_TAB "    "

static void iwarp_catf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void iwarp_catf(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strnlen(buf, len);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

static const char *iwarp_str_or_null(const char *s)
{
	return s ? s : "(null)";
}

static void iwarp_tostr_device(char *buf, size_t len,
			       const struct fi_device_attr *d)
{
	const char *p = IWARP_TAB IWARP_TAB IWARP_TAB;

	iwarp_catf(buf, len, "%sfi_device_attr:\n", IWARP_TAB IWARP_TAB);
	iwarp_catf(buf, len, "%sname: %s\n", p, iwarp_str_or_null(d->name));
	iwarp_catf(buf, len, "%sdevice_id: %s\n", p,
		   iwarp_str_or_null(d->device_id));
	iwarp_catf(buf, len, "%sdevice_version: %s\n", p,
		   iwarp_str_or_null(d->device_version));
	iwarp_catf(buf, len, "%svendor_id: %s\n", p,
		   iwarp_str_or_null(d->vendor_id));
	iwarp_catf(buf, len, "%sdriver: %s\n", p,
		   iwarp_str_or_null(d->driver));
	iwarp_catf(buf, len, "%sfirmware: %s\n", p,
		   iwarp_str_or_null(d->firmware));
}

static void iwarp_tostr_bus(char *buf, size_t len, const struct fi_bus_attr *b)
{
	const struct fi_pci_attr *pci = &b->attr.pci;
	const char *p = IWARP_TAB IWARP_TAB IWARP_TAB IWARP_TAB;

	iwarp_catf(buf, len, "%sfi_bus_attr:\n%sbus_type: %s\n",
		   IWARP_TAB IWARP_TAB, IWARP_TAB IWARP_TAB IWARP_TAB,
		   b->bus_type == FI_BUS_PCI ? "FI_BUS_PCI" : "FI_BUS_UNKNOWN");
	if (b->bus_type != FI_BUS_PCI)
		return;
	iwarp_catf(buf, len, "%sfi_pci_attr:\n", IWARP_TAB IWARP_TAB IWARP_TAB);
	iwarp_catf(buf, len, "%sdomain_id: %u\n%sbus_id: %u\n"
		   "%sdevice_id: %u\n%sfunction_id: %u\n", p, pci->domain_id,
		   p, pci->bus_id, p, pci->device_id, p, pci->function_id);
}

static const char *iwarp_link_state_str(enum fi_link_state s)
{
	switch (s) {
	case FI_LINK_UP:
		return "FI_LINK_UP";
	case FI_LINK_DOWN:
		return "FI_LINK_DOWN";
	default:
		return "FI_LINK_UNKNOWN";
	}
}

static void iwarp_tostr_link(char *buf, size_t len,
			     const struct fi_link_attr *l)
{
	const char *p = IWARP_TAB IWARP_TAB IWARP_TAB;

	iwarp_catf(buf, len, "%sfi_link_attr:\n", IWARP_TAB IWARP_TAB);
	iwarp_catf(buf, len, "%saddress: %s\n%smtu: %zu\n%sspeed: %zu\n", p,
		   iwarp_str_or_null(l->address), p, l->mtu, p, l->speed);
	iwarp_catf(buf, len, "%sstate: %s\n%snetwork_type: %s\n", p,
		   iwarp_link_state_str(l->state), p,
		   iwarp_str_or_null(l->network_type));
}

static int iwarp_nic_tostr(const struct fid *fid, char *buf, size_t len)
{
	const struct fid_nic *nic = iwarp_container_of(fid, struct fid_nic,
						       fid);

	iwarp_catf(buf, len, "%snic:\n", IWARP_TAB);
	if (nic->device_attr)
		iwarp_tostr_device(buf, len, nic->device_attr);
	if (nic->bus_attr)
		iwarp_tostr_bus(buf, len, nic->bus_attr);
	if (nic->link_attr)
		iwarp_tostr_link(buf, len, nic->link_attr);
	return 0;
}

static struct fi_ops iwarp_nic_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_nic_close,
	.bind = iwarp_no_bind,
	.control = iwarp_nic_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_nic_tostr,
	.ops_set = iwarp_no_ops_set,
};

static struct fid_nic *iwarp_nic_alloc(void)
{
	struct fid_nic *nic = calloc(1, sizeof(*nic));

	if (!nic)
		return NULL;
	nic->fid.fclass = FI_CLASS_NIC;
	nic->fid.ops = &iwarp_nic_ops;
	nic->device_attr = calloc(1, sizeof(*nic->device_attr));
	nic->bus_attr = calloc(1, sizeof(*nic->bus_attr));
	nic->link_attr = calloc(1, sizeof(*nic->link_attr));
	if (!nic->device_attr || !nic->bus_attr || !nic->link_attr) {
		iwarp_nic_free(nic);
		return NULL;
	}
	return nic;
}

struct fid_nic *iwarp_nic_new(const char *name)
{
	struct fid_nic *nic = iwarp_nic_alloc();

	if (!nic)
		return NULL;
	if (!iwarp_nic_pci(name, &nic->bus_attr->attr.pci))
		nic->bus_attr->bus_type = FI_BUS_PCI;
	if (iwarp_nic_device(nic->device_attr, name) ||
	    iwarp_nic_link(nic->link_attr, name)) {
		iwarp_nic_free(nic);
		return NULL;
	}
	return nic;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the provider knows of an interface's hardware: fi_info->nic,
 * read from sysfs (iwarp_nic.c), and where the NIC sits in the machine,
 * asked of hwloc (iwarp_topo.c). FI_IWARP_SYSFS_ROOT and
 * FI_IWARP_HWLOC_XML replace /sys and the live topology (for tests).
 */
#ifndef IWARP_NIC_H
#define IWARP_NIC_H

#include "iwarp.h"

#include <sched.h>

/* True if interface `name` has a device in sysfs: not a virtual one. */
bool iwarp_nic_physical(const char *name);
/* The PCI function of interface `name`: 0, or -FI_ENODATA (virtual). */
int iwarp_nic_pci(const char *name, struct fi_pci_attr *pci);
/*
 * A new fid_nic describing interface `name`, NULL on ENOMEM. Its fid
 * ops dup it (FI_DUP: fi_dupinfo), print it (fi_tostr) and free it
 * (fi_close: fi_freeinfo).
 */
struct fid_nic *iwarp_nic_new(const char *name);

/*
 * Stable sort of n interfaces, those nearest the calling thread's CPU
 * binding first: by the depth of the deepest topology object holding
 * both the binding and the NIC. A NIC hwloc does not know (virtual)
 * counts as the whole machine.
 */
void iwarp_topo_sort(struct iwarp_iface *ifs, size_t n);
/*
 * The CPUs of the NUMA node(s) of interface `name`'s NIC into *set, and
 * their list into buf. False (with an info log saying why) when there
 * is nothing to place: virtual interface, no topology, the whole machine.
 */
bool iwarp_topo_nic_cpus(const char *name, cpu_set_t *set, char *buf,
			 size_t size);
/* Frees the topology (provider cleanup). */
void iwarp_topo_fini(void);

#endif /* IWARP_NIC_H */

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NIC locality with hwloc: the order of fi_getinfo's entries and the
 * CPUs of the progress thread. The topology is loaded once, on first
 * use, with the important I/O devices (network PCI functions and their
 * OS devices), from FI_IWARP_HWLOC_XML when set (hwloc itself honours
 * HWLOC_XMLFILE too). CPU sets are read from and given to the kernel
 * directly, by OS index, as hwloc numbers them: hwloc's own binding
 * calls do nothing on a topology that is not this system's (XML).
 */
#include "iwarp_nic.h"

#include <hwloc.h>
#include <stdio.h>

static pthread_mutex_t iwarp_topo_lock = PTHREAD_MUTEX_INITIALIZER;
static hwloc_topology_t iwarp_topo;
static int iwarp_topo_state;	/* 0: not tried, 1: loaded, -1: failed */

static int iwarp_topo_load(hwloc_topology_t *topo)
{
	const char *xml = iwarp_params.hwloc_xml;

	if (hwloc_topology_init(topo))
		return -1;
	if (hwloc_topology_set_io_types_filter(
		    *topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) ||
	    (xml && hwloc_topology_set_xml(*topo, xml)) ||
	    hwloc_topology_load(*topo)) {
		FI_WARN(&iwarp_prov, FI_LOG_CORE,
			"hwloc cannot load the topology%s%s: %s; NIC "
			"locality unused\n", xml ? " of " : "", xml ? xml : "",
			strerror(errno));
		hwloc_topology_destroy(*topo);
		return -1;
	}
	FI_INFO(&iwarp_prov, FI_LOG_CORE, "hwloc topology loaded%s%s\n",
		xml ? " from " : "", xml ? xml : "");
	return 0;
}

static hwloc_topology_t iwarp_topo_get(void)
{
	hwloc_topology_t topo;

	pthread_mutex_lock(&iwarp_topo_lock);
	if (!iwarp_topo_state)
		iwarp_topo_state = iwarp_topo_load(&iwarp_topo) ? -1 : 1;
	topo = iwarp_topo_state > 0 ? iwarp_topo : NULL;
	pthread_mutex_unlock(&iwarp_topo_lock);
	return topo;
}

void iwarp_topo_fini(void)
{
	pthread_mutex_lock(&iwarp_topo_lock);
	if (iwarp_topo_state > 0)
		hwloc_topology_destroy(iwarp_topo);
	iwarp_topo_state = 0;
	pthread_mutex_unlock(&iwarp_topo_lock);
}

static hwloc_obj_t iwarp_topo_osdev(hwloc_topology_t topo, const char *name)
{
	hwloc_obj_t obj = NULL;

	while ((obj = hwloc_get_next_osdev(topo, obj)))
		if (obj->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK &&
		    obj->name && !strcmp(obj->name, name))
			return obj;
	return NULL;
}

/*
 * Where the NIC of interface `name` is attached: the first non-I/O
 * ancestor of its PCI function (from sysfs) or, failing that, of the OS
 * device hwloc names after it. NULL if hwloc does not know it.
 */
static hwloc_obj_t iwarp_topo_nic(hwloc_topology_t topo, const char *name)
{
	struct fi_pci_attr pci;
	hwloc_obj_t obj = NULL;

	if (!iwarp_nic_pci(name, &pci))
		obj = hwloc_get_pcidev_by_busid(topo, pci.domain_id,
						pci.bus_id, pci.device_id,
						pci.function_id);
	if (!obj)
		obj = iwarp_topo_osdev(topo, name);
	return obj ? hwloc_get_non_io_ancestor_obj(topo, obj) : NULL;
}

/* The smallest object holding the calling thread's CPU binding. */
static hwloc_obj_t iwarp_topo_caller(hwloc_topology_t topo)
{
	hwloc_obj_t root = hwloc_get_root_obj(topo), obj = NULL;
	hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
	cpu_set_t set;
	int cpu;

	if (cpus && !sched_getaffinity(0, sizeof(set), &set)) {
		for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set))
				hwloc_bitmap_set(cpus, (unsigned int)cpu);
		hwloc_bitmap_and(cpus, cpus, root->cpuset);
		if (!hwloc_bitmap_iszero(cpus))
			obj = hwloc_get_obj_covering_cpuset(topo, cpus);
	}
	hwloc_bitmap_free(cpus);
	return obj ? obj : root;
}

/* Nearness of a NIC to the caller: deeper common ancestor, nearer. */
static int iwarp_topo_near(hwloc_topology_t topo, hwloc_obj_t caller,
			   const char *name)
{
	hwloc_obj_t nic = iwarp_topo_nic(topo, name);

	if (!nic)
		return 0;
	return hwloc_get_common_ancestor_obj(topo, caller, nic)->depth;
}

/*
 * Only two interfaces or more, one of them with a NIC, have an order to
 * get right; virtual ones alone never need the topology loaded.
 */
static bool iwarp_topo_several(const struct iwarp_iface *ifs, size_t n)
{
	bool several = false, nic = false;
	size_t i;

	for (i = 0; i < n && !(several && nic); i++) {
		several = several || strcmp(ifs[i].name, ifs[0].name);
		nic = nic || iwarp_nic_physical(ifs[i].name);
	}
	return several && nic;
}

void iwarp_topo_sort(struct iwarp_iface *ifs, size_t n)
{
	hwloc_topology_t topo;
	hwloc_obj_t caller;
	size_t i, j;
	int *near;

	if (!iwarp_topo_several(ifs, n))
		return;
	topo = iwarp_topo_get();
	near = topo ? malloc(n * sizeof(*near)) : NULL;
	if (!near)
		return;
	caller = iwarp_topo_caller(topo);
	for (i = 0; i < n; i++)
		near[i] = iwarp_topo_near(topo, caller, ifs[i].name);
	/* insertion sort: stable, and n is a handful */
	for (i = 1; i < n; i++) {
		struct iwarp_iface ifc = ifs[i];
		int key = near[i];

		for (j = i; j > 0 && near[j - 1] < key; j--) {
			ifs[j] = ifs[j - 1];
			near[j] = near[j - 1];
		}
		ifs[j] = ifc;
		near[j] = key;
	}
	free(near);
}

static bool iwarp_topo_unplaced(const char *name, const char *why)
{
	FI_INFO(&iwarp_prov, FI_LOG_CORE,
		"progress thread for %s left where it starts: %s\n", name, why);
	return false;
}

/* hwloc's CPUs into a kernel set; false if none fits one. */
static bool iwarp_topo_to_set(hwloc_const_bitmap_t cpus, cpu_set_t *set)
{
	int cpu;

	CPU_ZERO(set);
	hwloc_bitmap_foreach_begin(cpu, cpus)
		if (cpu < CPU_SETSIZE)
			CPU_SET(cpu, set);
	hwloc_bitmap_foreach_end();
	return CPU_COUNT(set) > 0;
}

bool iwarp_topo_nic_cpus(const char *name, cpu_set_t *set, char *buf,
			 size_t size)
{
	hwloc_topology_t topo;
	hwloc_bitmap_t cpus;
	hwloc_obj_t nic;
	bool ok;

	if (!iwarp_nic_physical(name))
		return iwarp_topo_unplaced(name, "a virtual interface");
	topo = iwarp_topo_get();
	if (!topo)
		return iwarp_topo_unplaced(name, "no hwloc topology");
	nic = iwarp_topo_nic(topo, name);
	if (!nic)
		return iwarp_topo_unplaced(name, "hwloc knows no NIC of it");
	cpus = hwloc_bitmap_alloc();
	if (!cpus)
		return false;
	hwloc_cpuset_from_nodeset(topo, cpus, nic->nodeset);
	if (hwloc_bitmap_iszero(cpus) ||
	    hwloc_bitmap_isincluded(hwloc_get_root_obj(topo)->cpuset, cpus))
		ok = iwarp_topo_unplaced(name, "its NIC is as near to every "
					 "CPU");
	else
		ok = iwarp_topo_to_set(cpus, set);
	if (ok)
		hwloc_bitmap_list_snprintf(buf, size, cpus);
	hwloc_bitmap_free(cpus);
	return ok;
}

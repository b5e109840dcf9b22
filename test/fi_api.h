/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The libfabric API the tests ask for: that of the headers they are
 * built against, so a build on libfabric 2.x checks the 2.x behaviour
 * and one on 1.x exactly what it always did.
 */
#ifndef IWARP_TEST_FI_API_H
#define IWARP_TEST_FI_API_H

#include <rdma/fabric.h>

#define TEST_API	FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define TEST_API_V2	(FI_MAJOR_VERSION >= 2)

/*
 * 1.x values that 2.x headers deprecate with a warning at every use;
 * the ABI keeps them and 1.x applications still send them.
 */
#if TEST_API_V2
#define TEST_MR_BASIC		(1 << 0)
#define TEST_MR_SCALABLE	(1 << 1)
#define TEST_ORDER_STRICT	0x1ffULL
#define TEST_ORDER_DATA		(1ULL << 16)
#define TEST_ORDER_NONE		0ULL
#else
#define TEST_MR_BASIC		FI_MR_BASIC
#define TEST_MR_SCALABLE	FI_MR_SCALABLE
#define TEST_ORDER_STRICT	FI_ORDER_STRICT
#define TEST_ORDER_DATA		FI_ORDER_DATA
#define TEST_ORDER_NONE		FI_ORDER_NONE
#endif

#endif /* IWARP_TEST_FI_API_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/* Attributes the provider offers (attr.c). Included by cxlfi.h, after the
 * definitions all objects share. */
#ifndef CXLFI_ATTR_H
#define CXLFI_ATTR_H

/* attr.c: what the provider offers, as templates fi_getinfo copies */
/* Capabilities offered */
#define CXLFI_CAPS                                                             \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV |           \
	 FI_SOURCE | FI_MULTI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_RMA | \
	 FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |   \
	 FI_RMA_EVENT)
/* The transmit and receive halves of them (fi_getinfo(3), "Capabilities") */
#define CXLFI_TX_CAPS \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE)
#define CXLFI_RX_CAPS                                                         \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV |     \
	 FI_RMA_EVENT)
/* Per peer, in posting order: sends among themselves, and RMA and
 * atomics among themselves (a write after a read only up to
 * CXLFI_ORDER_WAR_MAX bytes: a larger read's answer may take its data
 * after a later write was applied), and not across sends and RMA (direct
 * RMA does not wait for sends still in the channel). docs/fabric.md,
 * "RMA". */
#define CXLFI_MSG_ORDER                                              \
	(FI_ORDER_SAS | FI_ORDER_WAW | FI_ORDER_RAR | FI_ORDER_RAW | \
	 FI_ORDER_WAR | FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW |        \
	 FI_ORDER_RMA_WAR | FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAR | \
	 FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)

extern const struct fi_tx_attr cxlfi_tx_attr;
extern const struct fi_rx_attr cxlfi_rx_attr;
extern const struct fi_ep_attr cxlfi_ep_attr;
extern const struct fi_domain_attr cxlfi_domain_attr;
extern const struct fi_fabric_attr cxlfi_fabric_attr;

#endif

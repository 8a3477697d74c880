/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the provider offers, as data: the attribute templates that
 * fi_getinfo copies into each fi_info (prov.c), which then fills in only
 * what depends on the hints and on the FI_CXL_* parameters.
 */
#include "cxlfi.h"

/* Sends complete once the data is in the pool (transmit complete); the
 * hints may ask for delivery complete instead (prov.c). */
const struct fi_tx_attr cxlfi_tx_attr = {
	.caps = CXLFI_TX_CAPS,
	.op_flags = FI_TRANSMIT_COMPLETE,
	.msg_order = CXLFI_MSG_ORDER,
	.comp_order = FI_ORDER_NONE,
	/* inject_size, size: from FI_CXL_INJECT_SIZE, FI_CXL_CELLS */
	.iov_limit = 1,
	.rma_iov_limit = 1,
};

const struct fi_rx_attr cxlfi_rx_attr = {
	.caps = CXLFI_RX_CAPS,
	.msg_order = CXLFI_MSG_ORDER,
	.comp_order = FI_ORDER_NONE,
	/* total_buffered_recv: FI_CXL_UNEXP_LIMIT */
	.size = 65536,
	.iov_limit = 1,
};

const struct fi_ep_attr cxlfi_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_UNSPEC,
	.protocol_version = 1,
	.max_msg_size = CXLFI_MAX_MSG,
	.msg_prefix_size = 0,
	.max_order_raw_size = CXLFI_MAX_MSG,
	.max_order_war_size = CXLFI_ORDER_WAR_MAX,
	.max_order_waw_size = CXLFI_MAX_MSG,
	.mem_tag_format = CXLFI_TAG_FORMAT,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

/* name: strdup'd by prov.c; ep_cnt: FI_CXL_MAX_EPS; threading, progress,
 * av_type and mr_mode: as the hints ask */
const struct fi_domain_attr cxlfi_domain_attr = {
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_key_size = 8,
	.cq_data_size = CXLFI_CQ_DATA_SIZE,
	.cq_cnt = 1024,
	.tx_ctx_cnt = 1024,
	.rx_ctx_cnt = 1024,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.max_ep_stx_ctx = 0,
	.max_ep_srx_ctx = 0,
	.cntr_cnt = 1024,
	.mr_iov_limit = 1,
	.mr_cnt = 1u << 20,
	.caps = FI_LOCAL_COMM | FI_REMOTE_COMM,
};

/* name: strdup'd by prov.c; api_version: the core's */
const struct fi_fabric_attr cxlfi_fabric_attr = {
	.prov_version = CXLFI_PROV_VERSION,
};

/* SPDX-License-Identifier: BSD-3-Clause */
/* Address vectors (av.c). Included by cxlfi.h, after the definitions all
 * objects share. */
#ifndef CXLFI_AV_H
#define CXLFI_AV_H

struct cxlfi_av_entry {
	struct cxlfi_addr addr;
	bool valid;
	/* a peer outside our pool, reached through the network link
	 * (netpath.c): its network address */
	bool net;
	uint8_t netlen;
	uint8_t netname[CXLFI_NET_NAME_MAX];
};

struct cxlfi_av {
	struct fid_av fid;
	struct cxlfi_domain *dom;
	enum fi_av_type type;
	bool events;	   /* FI_EVENT: inserts report to the bound EQ */
	struct fid_eq *eq; /* bound event queue */
	struct cxlfi_av_entry *tab;
	size_t count, cap;
	int refs;
	struct cxlfi_ep **eps; /* bound endpoints: their links learn inserts */
	size_t neps;
};

/* av.c */
int cxlfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av, void *context);
/* Entry for fi_addr, or NULL (logged) if invalid. */
const struct cxlfi_av_entry *cxlfi_av_get(struct cxlfi_av *av, fi_addr_t a);
/* fi_addr of the peer with that endpoint index, or FI_ADDR_NOTAVAIL; a
 * network peer's source key (CXLFI_NET_SRC) is its fi_addr. */
fi_addr_t cxlfi_av_reverse(struct cxlfi_av *av, uint32_t index);
/* Is fa a peer outside our pool, reached through the network link? */
static inline bool cxlfi_av_is_net(const struct cxlfi_av *av, fi_addr_t fa)
{
	return av && fa < av->count && av->tab[fa].valid && av->tab[fa].net;
}
/* Receive matching knows a peer by a 32-bit source: its endpoint index
 * in our pool, or for a network peer this bit with its fi_addr (which
 * the network provider reports, FI_AV_USER_ID). */
#define CXLFI_NET_SRC 0x80000000u
#define CXLFI_NET_SRC_UNKNOWN 0xffffffffu /* source not known yet */

#endif

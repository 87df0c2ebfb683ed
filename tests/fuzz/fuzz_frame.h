/*
 * Frames the fuzzers build or mutate, made well-formed again as far as the
 * input asks: shared by fuzz_sw_rx.c and the data-path bed. Needs the
 * transport's internal header (sw_int.h) first, for its field helpers,
 * header sizes, IPv4 checksum and ICRC.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_FUZZ_FRAME_H
#define QRDMA_FUZZ_FRAME_H

/*
 * IP/UDP lengths and IPv4 checksum for an IP packet of l3len bytes (lens),
 * and the ICRC at its end (icrc), as far as the (possibly mutated) frame
 * allows.
 */
static inline void fuzz_frame_fixup(uint8_t *f, size_t len, size_t l3len, bool lens, bool icrc)
{
    uint8_t *l3 = f + ETH_HLEN;
    size_t iphl;
    bool v6;

    if (len < ETH_HLEN) {
        return;
    }
    if (ld16(f + 12) == ETHERTYPE_IPV4) {
        v6 = false;
        iphl = IPV4_HLEN;
    } else if (ld16(f + 12) == ETHERTYPE_IPV6) {
        v6 = true;
        iphl = IPV6_HLEN;
    } else {
        return;
    }
    if (len < ETH_HLEN + iphl + UDP_HLEN) {
        return;
    }
    if (lens && l3len >= iphl + UDP_HLEN && l3len <= 0xffff && ETH_HLEN + l3len <= len) {
        st16(l3 + iphl + 4, (uint16_t)(l3len - iphl));
        if (v6) {
            st16(l3 + 4, (uint16_t)(l3len - IPV6_HLEN));
        } else {
            st16(l3 + 2, (uint16_t)l3len);
            st16(l3 + 10, 0);
            st16(l3 + 10, qrdma_inet_csum(l3, IPV4_HLEN, 0));
        }
    }
    if (icrc) {
        size_t l = v6 ? IPV6_HLEN + (size_t)ld16(l3 + 4) : ld16(l3 + 2);
        uint32_t c;

        if (l < iphl + UDP_HLEN + BTH_LEN + ICRC_LEN || ETH_HLEN + l > len) {
            return;
        }
        c = qsw_icrc(qsw_crc32_tables(), l3, l - ICRC_LEN, v6);
        l3[l - 4] = (uint8_t)c;
        l3[l - 3] = (uint8_t)(c >> 8);
        l3[l - 2] = (uint8_t)(c >> 16);
        l3[l - 1] = (uint8_t)(c >> 24);
    }
}

#endif /* QRDMA_FUZZ_FRAME_H */

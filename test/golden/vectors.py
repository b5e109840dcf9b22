#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Golden iWARP frames, written field by field from the RFC diagrams.

The CRC trailers are filled in by the bitwise CRC32c below, written from
the RFC 5044 §4.3 definition and independent of src/crc32c.c. Running this
file regenerates golden.h; test/run sends the same bytes through
test/wire_replay and checks them with Wireshark's dissector.
"""
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def h(s):
    return bytes.fromhex(s.replace(" ", ""))


def u16(v):
    return v.to_bytes(2, "big")


def u32(v):
    return v.to_bytes(4, "big")


def u64(v):
    return v.to_bytes(8, "big")


def fpdu(ulpdu, crc=True):
    """RFC 5044 §4: ULPDU_Length | ULPDU | PAD | CRC (little-endian octets)."""
    body = u16(len(ulpdu)) + ulpdu
    body += bytes(-len(body) % 4)
    c = crc32c(body) if crc else 0
    return body + c.to_bytes(4, "little")


# RFC 5041 §4.2/4.3 control octet + RFC 5040 §4.1 RDMAP control octet:
# T|L|rsvd(4)|DV(2)  RV(2)|rsvd(2)|opcode(4)
def ctrl(tagged, last, op, dv=1, rv=1):
    return bytes([(0x80 if tagged else 0) | (0x40 if last else 0) | dv,
                  rv << 6 | op])


def tagged(op, stag, to, payload=b"", last=True):
    # RFC 5041 §4.2: control, STag, Tagged Offset
    return ctrl(True, last, op) + u32(stag) + u64(to) + payload


def untagged(op, qn, msn, mo=0, inv=0, payload=b"", last=True):
    # RFC 5041 §4.3 with RFC 5040 §4.1 Invalidate STag in RsvdULP
    return ctrl(False, last, op) + u32(inv) + u32(qn) + u32(msn) + u32(mo) \
        + payload


def rreq(sink_stag, sink_to, size, src_stag, src_to):
    # RFC 5040 §4.4
    return u32(sink_stag) + u64(sink_to) + u32(size) + u32(src_stag) \
        + u64(src_to)


def areq(op, req_id, stag, to, data, mask, cmp=0, cmp_mask=0):
    # RFC 7306 Atomic Request: reserved(28) opcode(4) | Request Identifier
    # | Remote STag | Remote TO | Add/Swap Data | Add/Swap Mask | Compare
    # Data | Compare Mask
    return u32(op) + u32(req_id) + u32(stag) + u64(to) + u64(data) \
        + u64(mask) + u64(cmp) + u64(cmp_mask)


def aresp(req_id, orig):
    # RFC 7306 Atomic Response: Original Request Identifier | Original
    # Remote Data Value
    return u32(req_id) + u64(orig)


def term_ctrl(layer, etype, ecode, m=0, d=0, r=0):
    # RFC 5040 §4.8 figure 8: Layer(4) EType(4) Code(8) M D R, 13 reserved
    return bytes([layer << 4 | etype, ecode, m << 7 | d << 6 | r << 5, 0])


KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"


def mpa(key, flags, rev, pd):
    # RFC 5044 §7.1: key(16) | M C R S rsvd | Rev | PD_Length | PD
    return key + bytes([flags, rev]) + u16(len(pd)) + pd


def enh(a, b, ird, c, d, ord_):
    # RFC 6581 §9: A B IRD(14) | C D ORD(14)
    return u16(a << 15 | b << 14 | ird) + u16(c << 15 | d << 14 | ord_)


RREQ_HDR = untagged(1, 1, 1) + rreq(0x11223344, 0x1000, 0x10000,
                                     0x55667788, 0x2000)
BAD_QN_HDR = untagged(3, 5, 9)

# name, kind, bytes. kind: req/rep = MPA frame, fpdu = CRC'd FPDU.
MPA = [
    ("req_v1", "req", mpa(KEY_REQ, 0x40, 1, b"")),
    ("req_v1_markers_pd", "req", mpa(KEY_REQ, 0xC0, 1, b"hello")),
    ("rep_v1", "rep", mpa(KEY_REP, 0x40, 1, b"")),
    ("req_v2_p2p_all_rtr", "req",
     mpa(KEY_REQ, 0x50, 2, enh(1, 1, 16, 1, 1, 8) + b"ulp!")),
    ("rep_v2_write_rtr", "rep", mpa(KEY_REP, 0x50, 2, enh(1, 0, 8, 1, 0, 16))),
    ("rep_v2_read_rtr", "rep", mpa(KEY_REP, 0x10, 2, enh(1, 0, 1, 0, 1, 1))),
    ("rep_v2_send_rtr", "rep", mpa(KEY_REP, 0x10, 2, enh(1, 1, 4, 0, 0, 4))),
    ("req_v2_no_negotiation", "req",
     mpa(KEY_REQ, 0x10, 2, enh(0, 0, 0x3FFF, 0, 0, 0x3FFF))),
    ("req_v2_no_enhanced", "req", mpa(KEY_REQ, 0x40, 2, b"")),
    ("rep_v2_reject", "rep",
     mpa(KEY_REP, 0x30, 2, enh(0, 0, 0, 0, 0, 0) + b"denied")),
    ("req_v2_pd_512", "req", mpa(KEY_REQ, 0x10, 2, enh(1, 0, 1, 1, 0, 1)
                                 + bytes(range(256)) + bytes(range(252)))),
]

FPDU = [
    # RFC 6581 §7.1 zero-length RTRs; the Write RTR bytes match Linux siw
    ("rtr_write", fpdu(tagged(0, 1, 0))),
    ("rtr_read", fpdu(untagged(1, 1, 1) + rreq(1, 0, 0, 1, 0))),
    ("rtr_send", fpdu(untagged(3, 0, 1))),
    # Sends with 1..4 payload octets: pad 3, 2, 1, 0 (RFC 5044 §4.2)
    ("send_pad3", fpdu(untagged(3, 0, 2, payload=b"A"))),
    ("send_se_pad2", fpdu(untagged(5, 0, 3, payload=b"BC"))),
    ("send_inv_pad1", fpdu(untagged(4, 0, 4, inv=0x12345678,
                                    payload=b"DEF"))),
    ("send_se_inv_pad0", fpdu(untagged(6, 0, 5, inv=0x9ABCDEF0,
                                       payload=b"GHIJ"))),
    ("send_middle_segment", fpdu(untagged(3, 0, 6, mo=4096, last=False,
                                          payload=b"mid"))),
    ("write", fpdu(tagged(0, 0xDEADBEEF, 0x100000000,
                          bytes(range(1, 9))))),
    ("write_not_last", fpdu(tagged(0, 0xDEADBEEF, 0x10, b"xyz",
                                   last=False))),
    ("read_resp", fpdu(tagged(2, 0x01020304, 0x10, b"12345"))),
    ("read_req", fpdu(RREQ_HDR)),
    ("terminate", fpdu(untagged(7, 2, 1) + term_ctrl(2, 0, 2))),
    ("terminate_ddp_copy", fpdu(untagged(7, 2, 1) +
                                term_ctrl(1, 2, 1, m=1, d=1) +
                                u16(len(BAD_QN_HDR)) + BAD_QN_HDR)),
    ("terminate_rreq_copy", fpdu(untagged(7, 2, 1) +
                                 term_ctrl(0, 1, 0, m=1, d=1, r=1) +
                                 u16(len(RREQ_HDR)) + RREQ_HDR[:18] +
                                 RREQ_HDR[18:])),
    ("terminate_tagged_copy", fpdu(untagged(7, 2, 1) +
                                   term_ctrl(1, 1, 1, m=1, d=1) +
                                   u16(14) + tagged(0, 7, 0x40))),
    # RFC 7306 atomics: requests on QN 4, responses on QN 3
    ("atomic_fetch_add", fpdu(untagged(0xA, 4, 1) +
                              areq(0, 7, 0x0BADF00D, 0x1000,
                                   0x0101010101010101, 0x8000000080000000))),
    ("atomic_cmp_swap", fpdu(untagged(0xA, 4, 2) +
                             areq(2, 8, 0x0BADF00D, 0x1008,
                                  0xCAFEF00DDEADBEEF, 0xFFFFFFFF00000000,
                                  0x1122334455667788, 0xFFFF))),
    ("atomic_resp", fpdu(untagged(0xB, 3, 1) +
                         aresp(7, 0x1122334455667788))),
    ("send_no_crc", fpdu(untagged(3, 0, 7, payload=b"nocrc"), crc=False)),
]


def c_bytes(b):
    out = []
    for i in range(0, len(b), 12):
        out.append("\t\t" + " ".join("0x%02x," % x for x in b[i:i + 12]))
    return "\n".join(out)


def main():
    w = sys.stdout.write
    w("/* SPDX-License-Identifier: BSD-2-Clause */\n")
    w("/* Generated by test/golden/vectors.py: edit that file instead. */\n")
    w("#ifndef IWARP_TEST_GOLDEN_H\n#define IWARP_TEST_GOLDEN_H\n\n")
    w("#include <stddef.h>\n#include <stdint.h>\n\n")
    w("struct golden {\n\tconst char *name;\n\tint kind;\t/* 0 req, 1 rep, "
      "2 fpdu, 3 fpdu without CRC */\n\tsize_t len;\n"
      "\tconst uint8_t *bytes;\n};\n\n")
    items = [(n, 0 if k == "req" else 1, b) for n, k, b in MPA]
    items += [(n, 3 if n.endswith("no_crc") else 2, b) for n, b in FPDU]
    for n, _, b in items:
        w("static const uint8_t golden_%s[] = {\n%s\n};\n" % (n, c_bytes(b)))
    w("\nstatic const struct golden goldens[] = {\n")
    for n, k, b in items:
        w("\t{ \"%s\", %d, sizeof(golden_%s), golden_%s },\n" % (n, k, n, n))
    w("};\n\n#define N_GOLDEN (sizeof(goldens) / sizeof(goldens[0]))\n\n")
    w("#endif\n")


if __name__ == "__main__":
    main()

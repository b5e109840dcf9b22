#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench/summarize.py OUTDIR REPEATS FAILURES: turns OUTDIR/raw.tsv
(config, kind, size, repeat, value, cpu per message) into a markdown
summary on stdout (medians with min-max, ratios from the same run, the
targets of the benchmark) and writes the gnuplot script and data files
for OUTDIR/bench.png."""
import os
import statistics
import sys

outdir, repeats, failures = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {}
by_rep = {}
kinds = {}
for line in open(os.path.join(outdir, "raw.tsv")):
    cfg, kind, size, rep, value, cpu = line.rstrip("\n").split("\t")
    # a second figure of the same run (bench_peers, allpairs)
    if kind in ("peers_run", "peermem"):
        cfg += "#run" if kind == "peers_run" else "#mem"
    if kind in ("peers", "allpairs") or cfg.endswith("#mem"):
        kinds[(cfg, int(size))] = "peermem" if cfg.endswith("#mem") else kind
    rows.setdefault((cfg, int(size)), []).append((float(value), float(cpu)))
    by_rep.setdefault((cfg, int(size)), {})[rep] = float(value)
    # CPU per message, compared repeat by repeat as the figures are
    by_rep.setdefault((cfg + "#cpu", int(size)), {})[rep] = float(cpu)


def stat(cfg, size):
    v = rows.get((cfg, size))
    if not v:
        return None
    vals = [x[0] for x in v]
    cpus = [x[1] for x in v]
    return (statistics.median(vals), min(vals), max(vals),
            statistics.median(cpus), len(vals))


def med(cfg, size):
    s = stat(cfg, size)
    return s[0] if s else None


def human(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return "%d MiB" % (n >> 20)
    if n >= 1024 and n % 1024 == 0:
        return "%d KiB" % (n >> 10)
    return "%d B" % n


def cell(cfg, size, fmt="%.1f", cpu=False):
    s = stat(cfg, size)
    if not s:
        return "-"
    if cpu:
        return fmt % s[3]
    if s[4] == 1:
        return fmt % s[0]
    return (fmt + " (" + fmt + "-" + fmt + ")") % (s[0], s[1], s[2])


def sizes_of(cfgs):
    return sorted({s for (c, s) in rows if c in cfgs})


def rep_ratios(a, b, reps=None):
    # each repeat compares configurations that ran minutes apart at most;
    # the median of those ratios resists slow drift better than a ratio
    # of two medians; reps: only those repeats
    ra, rb = by_rep.get(a, {}), by_rep.get(b, {})
    return sorted(ra[k] / rb[k] for k in ra
                  if k in rb and rb[k] and (reps is None or k in reps))


def ratio_cell(a, b, size):
    r = rep_ratios((a, size), (b, size))
    return "%.2f" % statistics.median(r) if r else "-"


def table(title, cfgs, names, fmt, cpu=False, ratios=()):
    # ratios: (header, cfg, reference cfg) columns, per size
    cfgs = [c for c in cfgs if any(k[0] == c for k in rows)]
    if not cfgs:
        return
    ratios = [r for r in ratios if r[1] in cfgs and r[2] in cfgs]
    print("### " + title + "\n")
    print("| size | " + " | ".join([names[c] for c in cfgs] +
                                   [r[0] for r in ratios]) + " |")
    print("|---:|" + "---:|" * (len(cfgs) + len(ratios)))
    for s in sizes_of(cfgs):
        print("| %s | " % human(s) +
              " | ".join([cell(c, s, fmt, cpu) for c in cfgs] +
                         [ratio_cell(a, b, s) for _, a, b in ratios]) +
              " |")
    print()


NAMES = {
    "raw_lat": "raw TCP", "raw_bw": "raw TCP stream",
    "pp_iwarp_msg": "iwarp msg", "pp_tcp_msg": "tcp msg",
    "pp_iwarp_rdm": "iwarp rdm", "pp_tcp_rdm": "tcp rdm",
    "fi_iwarp_msg_lat": "iwarp msg", "fi_tcp_msg_lat": "tcp msg",
    "fi_iwarp_rdm_lat": "iwarp rdm", "fi_tcp_rdm_lat": "tcp rdm",
    "fi_iwarp_msg_bw": "iwarp msg", "fi_iwarp_msg_bw_crc": "iwarp msg CRC",
    "fi_tcp_msg_bw": "tcp msg", "fi_iwarp_rdm_bw": "iwarp rdm",
    "fi_tcp_rdm_bw": "tcp rdm",
    "mpi_iwarp_lat": "MPI iwarp", "mpi_tcpofi_lat": "MPI libfabric tcp",
    "mpi_ob1_lat": "MPI ob1 tcp", "mpi_iwarp_bw": "MPI iwarp",
    "mpi_tcpofi_bw": "MPI libfabric tcp", "mpi_ob1_bw": "MPI ob1 tcp",
    "raw_conn": "bare TCP connect", "fi_iwarp_msg_conn": "iwarp msg",
    "fi_tcp_msg_conn": "tcp msg", "crc32c": "CRC32c",
    "fi_iwarp_msg_conn_key": "iwarp msg, job key",
    "fi_iwarp_msg_connkeep": "iwarp msg", "fi_tcp_msg_connkeep": "tcp msg",
    "fi_iwarp_rdm_lat_key": "iwarp rdm, job key",
    "fi_iwarp_rdm_lat_shm": "iwarp rdm shm", "fi_iwarp_rdm_bw_shm":
    "iwarp rdm shm", "mpi_iwarpshm_lat": "MPI iwarp shm",
    "mpi_vader_lat": "MPI ob1 vader", "mpi_iwarpshm_bw": "MPI iwarp shm",
    "mpi_vader_bw": "MPI ob1 vader",
}
for c in ("allreduce", "alltoall"):
    NAMES["mpi_iwarpshm_" + c] = "MPI iwarp shm"
    NAMES["mpi_vader_" + c] = "MPI ob1 vader"
MPIPATHS = ("iwarp", "tcpofi", "ob1", "iwarpshm", "vader")
for p in MPIPATHS:
    NAMES["mpi_%s_bibw" % p] = NAMES["mpi_%s_bw" % p] + " bibw"
    for m in ("bw", "bibw"):
        NAMES["mpi_%s_%s_unbound" % (p, m)] = (NAMES["mpi_%s_%s" % (p, m)] +
                                               ", unbound")

LAT = ["raw_lat", "pp_iwarp_msg", "pp_tcp_msg", "pp_iwarp_rdm", "pp_tcp_rdm"]
FILAT = ["raw_lat", "fi_iwarp_msg_lat", "fi_tcp_msg_lat", "fi_iwarp_rdm_lat",
         "fi_iwarp_rdm_lat_key", "fi_tcp_rdm_lat", "fi_iwarp_rdm_lat_shm"]
BW = ["raw_bw", "fi_iwarp_msg_bw", "fi_iwarp_msg_bw_crc", "fi_tcp_msg_bw",
      "fi_iwarp_rdm_bw", "fi_tcp_rdm_bw", "fi_iwarp_rdm_bw_shm"]
MPILAT = ["mpi_iwarp_lat", "mpi_tcpofi_lat", "mpi_ob1_lat",
          "mpi_iwarpshm_lat", "mpi_vader_lat"]


def mpi_cfgs(mode, paths=MPIPATHS, suffix=""):
    return ["mpi_%s_%s%s" % (p, mode, suffix) for p in paths]


def mpi_ratios(mode, suffix=""):
    # iwarp against the other MPI paths of the same mode and binding
    c = dict(zip(MPIPATHS, mpi_cfgs(mode, suffix=suffix)))
    return (("iwarp / libfabric tcp", c["iwarp"], c["tcpofi"]),
            ("iwarp / ob1", c["iwarp"], c["ob1"]),
            ("iwarp shm / vader", c["iwarpshm"], c["vader"]))


MPIBW = mpi_cfgs("bw")
MPIBIBW = mpi_cfgs("bibw")

print("## iwarp benchmark (loopback)\n")
print("%s repeats, configurations interleaved in each (in reverse order "
      "every other one); medians with min-max over the repeats; %s failed "
      "runs.\n" % (repeats, failures))
table("Latency, us (fi_pingpong; raw TCP: busy-poll ping-pong)", LAT, NAMES,
      "%.2f")
table("Latency, us (bench_fi, same code for both providers)", FILAT, NAMES,
      "%.2f")
table("CPU per message, us (user+system of both processes, bench_fi lat)",
      FILAT, NAMES, "%.2f", cpu=True)
table("Bandwidth, MB/s (window of 64 messages, then an ack)", BW, NAMES,
      "%.0f")
table("CPU per message, us (bandwidth runs)", BW, NAMES, "%.2f", cpu=True)
table("MPI latency, us (blocking ping-pong)", MPILAT, NAMES, "%.2f")
table("MPI bandwidth, MB/s (osu_bw: window of 64 Isend, then an ack)",
      MPIBW, NAMES, "%.0f", ratios=mpi_ratios("bw"))
table("MPI bidirectional bandwidth, MB/s (osu_bibw: each rank 64 Irecv and "
      "64 Isend, then waits for all; both directions counted)", MPIBIBW,
      NAMES, "%.0f", ratios=mpi_ratios("bibw"))
for m, osu in (("bw", "osu_bw"), ("bibw", "osu_bibw")):
    table("MPI %s, ranks unbound (mpirun --bind-to none), MB/s" % osu,
          mpi_cfgs(m, MPIPATHS[:3], "_unbound"), NAMES, "%.0f",
          ratios=mpi_ratios(m, "_unbound"))
table("MPI CPU per message, us (both ranks, latency runs)", MPILAT, NAMES,
      "%.2f", cpu=True)
for c, osu in (("allreduce", "osu_allreduce"), ("alltoall", "osu_alltoall")):
    table("MPI %s, 4 ranks on one host (oversubscribed), us per call "
          "(%s)" % (c, osu), ["mpi_iwarpshm_" + c, "mpi_vader_" + c], NAMES,
          "%.2f", ratios=(("iwarp shm / vader", "mpi_iwarpshm_" + c,
                           "mpi_vader_" + c),))

conn = [c for c in ("raw_conn", "fi_iwarp_msg_conn", "fi_iwarp_msg_conn_key",
                    "fi_tcp_msg_conn")
        if stat(c, 0)]
if conn:
    print("### Connection setup, us (median of 100-200 per run)\n")
    print("| | " + " | ".join(NAMES[c] for c in conn) + " |")
    print("|---|" + "---:|" * len(conn))
    print("| setup | " + " | ".join(cell(c, 0, "%.1f") for c in conn) + " |")
    print("| CPU | " + " | ".join(cell(c, 0, "%.1f", True) for c in conn) +
          " |")
    if stat("raw_conn", 0) and stat("fi_iwarp_msg_conn", 0):
        print("\niwarp (TCP connect + MPA Request/Reply + RTR) / bare TCP "
              "connect: %.1fx" % (med("fi_iwarp_msg_conn", 0) /
                                  med("raw_conn", 0)))
    print()
keep = [c for c in ("fi_iwarp_msg_connkeep", "fi_tcp_msg_connkeep")
        if stat(c, 0)]
if keep:
    print("### Connection setup while the server keeps every endpoint, us "
          "(bench_fi connkeep: 2000 connections)\n")
    print("| | " + " | ".join(NAMES[c] for c in keep) + " |")
    print("|---|" + "---:|" * len(keep))
    print("| first 100 | " + " | ".join(cell(c, 0, "%.1f") for c in keep) +
          " |")
    print("| last 100 (1900 kept) | " +
          " | ".join(cell(c, 2000, "%.1f") for c in keep) + " |")
    print()


def by_kind(kind):
    # (cfg, size) pairs of one RESULT kind: bench_peers and allpairs runs
    # print two kinds under one configuration
    return sorted({(c, s) for (c, s) in kinds if kinds[(c, s)] == kind})


mem = [(c, s) for c, s in by_kind("peers") + by_kind("peermem")]
if mem:
    print("### Resident memory per connected peer, KiB\n")
    print("bench_peers: one RDM endpoint connected to N endpoints of "
          "another process (after connecting; after 100 rounds of 1 KiB "
          "echoes); MPI: the first MPI_Alltoall of N oversubscribed ranks, "
          "mean over the ranks.\n")
    print("| configuration | peers | connected | after the rounds | "
          "CPU per connect, us | CPU per message in the rounds, us |")
    print("|---|---:|---:|---:|---:|---:|")
    for c, s in mem:
        run = stat(c + "#run", s)
        print("| %s | %d | %s | %s | %s | %s |" % (
            c.replace("#mem", ""), s, cell(c, s, "%.1f"), "%.1f" % run[0] if run else "-",
            cell(c, s, "%.0f", True) if kinds[(c, s)] == "peers" else "-",
            "%.2f" % run[3] if run and kinds[(c, s)] == "peers" else "-"))
    print()
pairs = by_kind("allpairs")
if pairs:
    print("### All pairs connected (first MPI_Alltoall of 1 KiB, "
          "oversubscribed), ms\n")
    print("| configuration | ranks | time (slowest rank) | CPU per rank |")
    print("|---|---:|---:|---:|")
    for c, s in pairs:
        st = stat(c, s)
        print("| %s | %d | %.1f (%.1f-%.1f) | %.1f |" % (
            c, s, st[0] / 1e3, st[1] / 1e3, st[2] / 1e3, st[3] / 1e3))
    print()

# The host places this VM's two vCPUs near each other or far apart and
# changes that within seconds; MPI between two ranks follows it over TCP
# as on one host (a 1 MiB ping-pong takes twice as long far apart).
# bench_line measured the cache-line round trip before and after each
# 2-rank MPI run, and mpi_bench's two ranks before and after each size
# (place0_, place1_); two figures compare under one placement when all
# four measurements agree (all near or all far), those of the size when
# there are, else those of the run.
NEAR_NS = 250


def placement(rep, cfgs, size=None):
    v = []
    for c in cfgs:
        c = c.split("#")[0]
        keys = [("place0_" + c, size), ("place1_" + c, size)]
        if size is None or any(rep not in by_rep.get(k, {}) for k in keys):
            keys = [("line_" + c, 0), ("line_" + c, 1)]
        v += [by_rep.get(k, {}).get(rep) for k in keys]
    if None in v:
        return None, v
    if max(v) < NEAR_NS:
        return "near", v
    return ("far" if min(v) >= NEAR_NS else "changed"), v


def held(a, b, size=None):
    # the repeats in which a and b ran under one placement
    reps = {k for (c, s) in by_rep if c == a for k in by_rep[(c, s)]}
    return sorted((k for k in reps if placement(k, (a, b), size)[0] in
                   ("near", "far")), key=int)


# targets: (text, value, ref, ratio bound, at most?)
targets = []


def target(text, a, b, bound, at_most, reps=None):
    r = rep_ratios(a, b, reps)
    if not r:
        targets.append((text, None, None, bound, at_most))
    else:
        targets.append((text, statistics.median(r), (r[0], r[-1]), bound,
                        at_most))


def target_sizes(text, a, b, lo, hi, bound, at_most=False, placed=False):
    # within `bound` at every size lo..hi both ran: the worst size decides;
    # placed: only the repeats that ran that size under one placement
    got = []
    for s in sorted({s for (c, s) in by_rep if c == a}):
        reps = held(a, b, s) if placed else None
        r = rep_ratios((a, s), (b, s), reps) if lo <= s <= hi else None
        if r:
            got.append((statistics.median(r), s, r))
    if not got:
        targets.append((text, None, None, bound, at_most))
        return
    m, s, r = max(got) if at_most else min(got)
    targets.append(("%s (%d sizes; worst %s%s)" %
                    (text, len(got), human(s),
                     ", %d repeats" % len(r) if placed else ""),
                    m, (r[0], r[-1]), bound, at_most))


M = 1 << 20
target("MSG 64 B latency / tcp msg", ("pp_iwarp_msg", 64),
       ("pp_tcp_msg", 64), 0.9, True)
target("MSG 64 B latency / raw TCP", ("pp_iwarp_msg", 64), ("raw_lat", 64),
       1.3, True)
target("RDM 64 B latency / tcp rdm", ("pp_iwarp_rdm", 64),
       ("pp_tcp_rdm", 64), 0.8, True)
target("RDM 64 KiB latency / tcp rdm", ("pp_iwarp_rdm", 65536),
       ("pp_tcp_rdm", 65536), 0.6, True)
target("MSG 1 MiB latency / tcp msg", ("pp_iwarp_msg", M), ("pp_tcp_msg", M),
       1.0, True)
target("RDM 1 MiB latency / tcp rdm", ("pp_iwarp_rdm", M), ("pp_tcp_rdm", M),
       1.0, True)
target("MSG 1 MiB bandwidth / raw TCP stream", ("fi_iwarp_msg_bw", M),
       ("raw_bw", M), 0.9, False)
target("RDM 1 MiB bandwidth / raw TCP stream", ("fi_iwarp_rdm_bw", M),
       ("raw_bw", M), 0.9, False)
# issue 20: osu_latency 8 B and 1 MiB, CPU per message at every size
target("MPI 8 B latency / Open MPI ob1 TCP", ("mpi_iwarp_lat", 8),
       ("mpi_ob1_lat", 8), 0.85, True)
target("MPI 1 MiB latency / MPI over libfabric tcp", ("mpi_iwarp_lat", M),
       ("mpi_tcpofi_lat", M), 0.8, True)
target_sizes("MPI CPU per message (latency runs), every size / MPI over "
             "libfabric tcp", "mpi_iwarp_lat#cpu", "mpi_tcpofi_lat#cpu", 0,
             4 * M, 1.0, True)
target("MPI 8 B latency, same host: iwarp shm / ob1 vader",
       ("mpi_iwarpshm_lat", 8), ("mpi_vader_lat", 8), 2.0, True)
target("MPI 64 KiB bandwidth, same host: iwarp shm / ob1 vader",
       ("mpi_iwarpshm_bw", 65536), ("mpi_vader_bw", 65536), 0.8, False)
target("MPI 1 MiB bandwidth, same host: iwarp shm / ob1 vader",
       ("mpi_iwarpshm_bw", M), ("mpi_vader_bw", M), 0.8, False)
target("MPI 1 MiB bandwidth / MPI over libfabric tcp", ("mpi_iwarp_bw", M),
       ("mpi_tcpofi_bw", M), 1.0, False)
target("MPI 1 MiB bandwidth / raw TCP stream", ("mpi_iwarp_bw", M),
       ("raw_bw", M), 0.85, False)
# issue 20: osu_bw and osu_bibw, every size 16 KiB..4 MiB, bound and not
for m, osu in (("bw", "osu_bw"), ("bibw", "osu_bibw")):
    for suffix, how in (("", "bound"), ("_unbound", "unbound")):
        for ref, name, bound in (("tcpofi", "MPI over libfabric tcp", 1.1),
                                 ("ob1", "Open MPI ob1 TCP", 1.0)):
            target_sizes("MPI %s, %s, every size 16 KiB-4 MiB / %s" %
                         (osu, how, name), "mpi_iwarp_%s%s" % (m, suffix),
                         "mpi_%s_%s%s" % (ref, m, suffix), 16 << 10, 4 * M,
                         bound)
# the same over TCP, only the repeats in which both ran under one placement
def held_text(a, b, size):
    both = set(by_rep.get((a, size), {})) & set(by_rep.get((b, size), {}))
    return "vCPU placement held (%d of %d)" % (len(held(a, b, size)),
                                               len(both))


for text, a, b, size, bound, at_most in (
        ("MPI 8 B latency / Open MPI ob1 TCP", "mpi_iwarp_lat",
         "mpi_ob1_lat", 8, 0.85, True),
        ("MPI 1 MiB latency / MPI over libfabric tcp", "mpi_iwarp_lat",
         "mpi_tcpofi_lat", M, 0.8, True),
        ("MPI 1 MiB bandwidth / MPI over libfabric tcp", "mpi_iwarp_bw",
         "mpi_tcpofi_bw", M, 1.0, False)):
    target("%s, %s" % (text, held_text(a, b, size)), (a, size), (b, size),
           bound, at_most, held(a, b, size))
target_sizes("MPI CPU per message (latency runs), every size / MPI over "
             "libfabric tcp, vCPU placement held", "mpi_iwarp_lat#cpu",
             "mpi_tcpofi_lat#cpu", 0, 4 * M, 1.0, True, True)
for m, osu in (("bw", "osu_bw"), ("bibw", "osu_bibw")):
    for suffix, how in (("", "bound"), ("_unbound", "unbound")):
        for ref, name, bound in (("tcpofi", "MPI over libfabric tcp", 1.1),
                                 ("ob1", "Open MPI ob1 TCP", 1.0)):
            target_sizes("MPI %s, %s, every size 16 KiB-4 MiB / %s, vCPU "
                         "placement held" % (osu, how, name),
                         "mpi_iwarp_%s%s" % (m, suffix),
                         "mpi_%s_%s%s" % (ref, m, suffix), 16 << 10, 4 * M,
                         bound, placed=True)
# issue 22: osu_bw and osu_bibw on one host from 64 KiB up, and the 4-rank
# collectives no slower than vader
for m, osu in (("bw", "osu_bw"), ("bibw", "osu_bibw")):
    target_sizes("MPI %s, same host, every size 64 KiB-4 MiB / ob1 vader" %
                 osu, "mpi_iwarpshm_" + m, "mpi_vader_" + m, 64 << 10,
                 4 * M, 0.8)
for c in ("allreduce", "alltoall"):
    target_sizes("MPI_%s, 4 ranks on one host, every size / ob1 vader" %
                 c.capitalize(), "mpi_iwarpshm_" + c, "mpi_vader_" + c, 0,
                 4 * M, 1.0, True)
# issue 22: same-host latency follows the vCPUs' placement too; a repeat
# whose four measurements around the 8 B size agree compares the two
# paths under one placement
same_reps = sorted(set(by_rep.get(("mpi_iwarpshm_lat", 8), {})) &
                   set(by_rep.get(("mpi_vader_lat", 8), {})), key=int)
steady = held("mpi_iwarpshm_lat", "mpi_vader_lat", 8)
target("MPI 8 B latency, same host, repeats whose vCPU placement held "
       "(%d of %d) / ob1 vader" % (len(steady), len(same_reps)),
       ("mpi_iwarpshm_lat", 8), ("mpi_vader_lat", 8), 2.0, True, steady)
# issue 20: CPU per message no higher than libfabric tcp, with many peers
# too (bench_peers' echo rounds, the parent's CPU per message)
for n in (16, 64):
    target("RDM CPU per message, %d peers / libfabric tcp rdm" % n,
           ("peers_iwarp_%d#run#cpu" % n, n),
           ("peers_tcp_%d#run#cpu" % n, n), 1.0, True)
target("MSG connection setup / tcp msg", ("fi_iwarp_msg_conn", 0),
       ("fi_tcp_msg_conn", 0), 0.5, True)
# a server's cost per endpoint it keeps (issue 20's connection storms)
target("MSG connection setup, 1900 endpoints kept / tcp msg",
       ("fi_iwarp_msg_connkeep", 2000), ("fi_tcp_msg_connkeep", 2000), 0.5,
       True)
target("MSG connection setup, 1900 endpoints kept / the first 100",
       ("fi_iwarp_msg_connkeep", 2000), ("fi_iwarp_msg_connkeep", 0), 1.25,
       True)
target("MSG connection setup / bare TCP connect", ("fi_iwarp_msg_conn", 0),
       ("raw_conn", 0), 4.0, True)
target("All pairs of 16 ranks connected / Open MPI ob1 TCP",
       ("mpi_iwarp_allpairs", 16), ("mpi_ob1_allpairs", 16), 1.0, True)
target("MSG connection setup, job key / none", ("fi_iwarp_msg_conn_key", 0),
       ("fi_iwarp_msg_conn", 0), 1.2, True)
target("RDM 64 B latency, job key / none", ("fi_iwarp_rdm_lat_key", 64),
       ("fi_iwarp_rdm_lat", 64), 1.1, True)
target("MSG 1 MiB bandwidth, CRC on / CRC off", ("fi_iwarp_msg_bw_crc", M),
       ("fi_iwarp_msg_bw", M), 0.9, False)

if same_reps:
    print("### Same-host 8 B latency and the vCPUs' placement\n")
    print("Cache-line round trip between the two ranks before and after "
          "the 8 B size (between CPUs 0 and 1 before and after the run "
          "where the ranks did not measure it), ns; near: all four below "
          "%d.\n" % NEAR_NS)
    print("| repeat | MPI iwarp shm, us | MPI ob1 vader, us | ratio | "
          "lines (iwarp before/after, vader before/after) | placement |")
    print("|---:|---:|---:|---:|---|---|")
    for k in same_reps:
        a = by_rep[("mpi_iwarpshm_lat", 8)][k]
        b = by_rep[("mpi_vader_lat", 8)][k]
        p, v = placement(k, ("mpi_iwarpshm_lat", "mpi_vader_lat"), 8)
        print("| %s | %.2f | %.2f | %.2f | %s | %s |" % (
            k, a, b, a / b if b else 0,
            " / ".join("-" if x is None else "%.0f" % x for x in v),
            p or "not measured"))
    print()

line_cfgs = sorted({c[5:] for (c, s) in by_rep
                    if c.startswith("line_") and "#" not in c})
if line_cfgs:
    reps = sorted({k for c in line_cfgs for k in
                   by_rep.get(("line_" + c, 0), {})}, key=int)
    print("### Where the host placed the two vCPUs, per 2-rank MPI run\n")
    print("Cache-line round trip between CPUs 0 and 1 (bench_line) before "
          "and after the run, ns; near: both below %d, far: both at or "
          "above it.\n" % NEAR_NS)
    print("| configuration | " + " | ".join("repeat " + k for k in reps) +
          " |")
    print("|---|" + "---|" * len(reps))
    for c in line_cfgs:
        cells = []
        for k in reps:
            p, v = placement(k, (c,))
            cells.append("-" if None in v else "%s (%.0f/%.0f)" %
                         (p, v[0], v[1]))
        print("| %s | %s |" % (c, " | ".join(cells)))
    print()

print("### Targets (median over the repeats of each repeat's ratio)\n")
print("| target | ratio | min-max | bound | met |")
print("|---|---:|---:|---:|---|")
for text, r, span, bound, at_most in targets:
    if r is None:
        print("| %s | - | - | %s %.2f | no data |" %
              (text, "<=" if at_most else ">=", bound))
        continue
    ok = r <= bound if at_most else r >= bound
    print("| %s | %.2f | %.2f-%.2f | %s %.2f | %s |" %
          (text, r, span[0], span[1], "<=" if at_most else ">=", bound,
           "yes" if ok else "NO"))
for n in (16, 64):
    m = stat("peers_iwarp_%d" % n, n)
    if m:
        print("| RDM memory per connected peer, %d peers, KiB | %.1f | "
              "%.1f-%.1f | <= 32 | %s |" % (n, m[0], m[1], m[2],
                                            "yes" if m[0] <= 32 else "NO"))
c = stat("crc32c", 65536)
if c:
    print("| CRC32c 64 KiB, GB/s per core | %.1f | %.1f-%.1f | >= 10 | %s |" %
          (c[0], c[1], c[2], "yes" if c[0] >= 10 else "NO"))
print()

# plot: one data file per configuration, latency and bandwidth panels
plots = {"lat": LAT + MPILAT, "bw": BW + MPIBW + MPIBIBW}
for kind, cfgs in plots.items():
    for cfg in cfgs:
        with open(os.path.join(outdir, cfg + ".dat"), "w") as f:
            for s in sizes_of([cfg]):
                st = stat(cfg, s)
                if s > 0 and st:
                    f.write("%d %g %g %g\n" % (s, st[0], st[1], st[2]))
with open(os.path.join(outdir, "plot.gp"), "w") as g:
    g.write('set terminal pngcairo noenhanced size 1400,600 font ",10"\n')
    g.write('set output "%s"\n' % os.path.join(outdir, "bench.png"))
    g.write("set multiplot layout 1,2\nset logscale xy\nset grid\n")
    g.write('set xlabel "message size (octets)"\nset key left top\n')
    for kind, title, unit in (("lat", "latency", "us"),
                              ("bw", "bandwidth", "MB/s")):
        g.write('set title "%s (median, bars min-max)"\n' % title)
        g.write('set ylabel "%s"\n' % unit)
        parts = []
        for cfg in plots[kind]:
            path = os.path.join(outdir, cfg + ".dat")
            if os.path.getsize(path):
                label = NAMES[cfg] + (" (fi_pingpong)" if
                                      cfg.startswith("pp_") else "")
                parts.append('"%s" using 1:2:3:4 with yerrorlines '
                             'title "%s"' % (path, label))
        g.write("plot " + ", ".join(parts) + "\n" if parts else
                'set label "no data" at 1,1\n')
    g.write("unset multiplot\n")

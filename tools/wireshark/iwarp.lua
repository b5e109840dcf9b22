-- SPDX-License-Identifier: BSD-2-Clause
--
-- iwarp.lua: a Wireshark dissector for what Wireshark's own iWARP
-- dissectors (iwarp_mpa, iwarp_ddp_rdmap) leave undecoded on the wire of
-- the libfabric "iwarp" provider:
--
--   * RFC 6581 enhanced MPA connection setup: the 4 octets of IRD/ORD at
--     the start of the MPA Request's and Reply's private data, with the
--     peer-to-peer bit (A) and the zero-length Send/Write/Read RTR bits
--     (B, C, D);
--   * the provider's RDM connection data (32 octets, "IWRD") after them;
--   * the provider's 40-octet RDM header at the start of every untagged
--     Send on an RDM connection (EAGER, RTS, FIN, CREDIT, WDATA, AREQ,
--     ARESP), with RTS/FIN and AREQ/ARESP pairing;
--   * RFC 7306: Atomic Request/Response (FetchAdd, CmpSwap, with masks and
--     request/response pairing) and Immediate Data.
--
-- All of it goes under the protocol "iwarp_ext" (fields iwarp_ext.*, list
-- them with `tshark -X lua_script:iwarp.lua -G fields | grep iwarp_ext`).
--
-- Use:
--   wireshark -X lua_script:tools/wireshark/iwarp.lua capture.pcap
--   tshark -X lua_script:tools/wireshark/iwarp.lua -r capture.pcap \
--          --disable-heuristic rpcrdma_iwarp \
--          --disable-heuristic smb_direct_iwarp -V
-- or copy the file to ~/.local/lib/wireshark/plugins/ to load it always.
-- Wireshark finds MPA on its own (its iwarp_mpa heuristic looks for the
-- MPA Request); add `-d tcp.port==N,iwarp_mpa` when the capture lacks the
-- connection setup. RPC-over-RDMA and SMB Direct claim Send payloads
-- before this script would see them: disable those heuristics, as above.
--
-- The wire formats are those of prov/iwarp/iwarp_rdm.h and the "RDM WIRE
-- FORMAT" section of fi_iwarp(7); only the wire is read here, nothing of
-- the C code. Written for Wireshark 3.6 and later (tested with 4.0).

local p = Proto("iwarp_ext", "iWARP extensions (RFC 6581, RFC 7306, libfabric iwarp RDM)")

---------------------------------------------------------------------------
-- fields

local yes_no = { [0] = "no", [1] = "yes" }

local rdm_ops = {
	[1] = "EAGER", [2] = "RTS", [3] = "FIN", [4] = "CREDIT",
	[5] = "WDATA", [6] = "AREQ", [7] = "ARESP",
}
local rdmap_names = {
	[0x8] = "Immediate Data", [0x9] = "Immediate Data with SE",
	[0xa] = "Atomic Request", [0xb] = "Atomic Response",
}
local aop_names = { [0] = "FetchAdd", [2] = "CmpSwap" }
-- libfabric's enum fi_op and enum fi_datatype (rdma/fi_domain.h)
local fi_ops = {
	[0] = "FI_MIN", "FI_MAX", "FI_SUM", "FI_PROD", "FI_LOR", "FI_LAND",
	"FI_BOR", "FI_BAND", "FI_LXOR", "FI_BXOR", "FI_ATOMIC_READ",
	"FI_ATOMIC_WRITE", "FI_CSWAP", "FI_CSWAP_NE", "FI_CSWAP_LE",
	"FI_CSWAP_LT", "FI_CSWAP_GE", "FI_CSWAP_GT", "FI_MSWAP",
}
local fi_types = {
	[0] = "FI_INT8", "FI_UINT8", "FI_INT16", "FI_UINT16", "FI_INT32",
	"FI_UINT32", "FI_INT64", "FI_UINT64", "FI_FLOAT", "FI_DOUBLE",
	"FI_FLOAT_COMPLEX", "FI_DOUBLE_COMPLEX", "FI_LONG_DOUBLE",
	"FI_LONG_DOUBLE_COMPLEX", "FI_INT128", "FI_UINT128",
}
local families = { [4] = "IPv4", [6] = "IPv6" }

local F = {
	-- RFC 6581 enhanced setup
	setup        = ProtoField.string("iwarp_ext.setup", "MPA frame"),
	enhanced     = ProtoField.bool("iwarp_ext.enhanced", "Enhanced (S flag, RFC 6581)"),
	ird_word     = ProtoField.uint16("iwarp_ext.ird_word", "IRD word", base.HEX),
	p2p          = ProtoField.bool("iwarp_ext.p2p", "A: peer-to-peer connection model", 16, nil, 0x8000),
	rtr_send     = ProtoField.bool("iwarp_ext.rtr_send", "B: zero-length Send RTR", 16, nil, 0x4000),
	ird          = ProtoField.uint16("iwarp_ext.ird", "IRD", base.DEC, nil, 0x3fff),
	ord_word     = ProtoField.uint16("iwarp_ext.ord_word", "ORD word", base.HEX),
	rtr_write    = ProtoField.bool("iwarp_ext.rtr_write", "C: zero-length RDMA Write RTR", 16, nil, 0x8000),
	rtr_read     = ProtoField.bool("iwarp_ext.rtr_read", "D: zero-length RDMA Read RTR", 16, nil, 0x4000),
	ord          = ProtoField.uint16("iwarp_ext.ord", "ORD", base.DEC, nil, 0x3fff),
	rtr          = ProtoField.string("iwarp_ext.rtr", "RTR"),
	ulp_pd       = ProtoField.bytes("iwarp_ext.ulp_pd", "ULP private data"),
	-- RDM connection data
	pd           = ProtoField.none("iwarp_ext.rdm.pd", "RDM connection data"),
	pd_magic     = ProtoField.uint32("iwarp_ext.rdm.pd.magic", "Magic", base.HEX),
	pd_vbyte     = ProtoField.uint8("iwarp_ext.rdm.pd.version_octet", "Version octet", base.HEX),
	pd_collision = ProtoField.bool("iwarp_ext.rdm.pd.collision", "Collision (this connection loses)", 8, nil, 0x80),
	pd_rfc7306   = ProtoField.bool("iwarp_ext.rdm.pd.rfc7306", "Executes RFC 7306 atomics", 8, nil, 0x40),
	pd_keyref    = ProtoField.bool("iwarp_ext.rdm.pd.keyref", "Reject: refused for the job key", 8, nil, 0x20),
	pd_shm       = ProtoField.bool("iwarp_ext.rdm.pd.shm", "Offers shared memory on one host", 8, nil, 0x10),
	pd_wide      = ProtoField.bool("iwarp_ext.rdm.pd.wide", "Takes the wide eager window (128)", 8, nil, 0x08),
	pd_version   = ProtoField.uint8("iwarp_ext.rdm.pd.version", "Version", base.DEC, nil, 0x07),
	pd_family    = ProtoField.uint8("iwarp_ext.rdm.pd.family", "Address family", base.DEC, families),
	pd_port      = ProtoField.uint16("iwarp_ext.rdm.pd.port", "Listening port", base.DEC),
	pd_addr4     = ProtoField.ipv4("iwarp_ext.rdm.pd.addr", "Listening address"),
	pd_addr6     = ProtoField.ipv6("iwarp_ext.rdm.pd.addr6", "Listening address (IPv6)"),
	pd_instance  = ProtoField.uint64("iwarp_ext.rdm.pd.instance", "Endpoint instance", base.HEX),
	pd_extra     = ProtoField.bytes("iwarp_ext.rdm.pd.extra", "Octets after the connection data"),
	-- job key (fi_iwarp(7), SECURITY): the auth block and auth message
	job          = ProtoField.none("iwarp_ext.job", "Job-key auth block"),
	job_magic    = ProtoField.uint32("iwarp_ext.job.magic", "Magic", base.HEX),
	job_version  = ProtoField.uint8("iwarp_ext.job.version", "Version", base.DEC),
	job_flags    = ProtoField.uint8("iwarp_ext.job.flags", "Flags", base.HEX),
	job_nonce    = ProtoField.bytes("iwarp_ext.job.nonce", "Nonce"),
	job_role     = ProtoField.string("iwarp_ext.job.role", "Role of the proof"),
	job_mac      = ProtoField.bytes("iwarp_ext.job.mac", "HMAC-SHA256 proof"),
	jmsg         = ProtoField.none("iwarp_ext.job.msg", "Job-key auth message"),
	jmsg_magic   = ProtoField.uint32("iwarp_ext.job.msg.magic", "Magic", base.HEX),
	jmsg_version = ProtoField.uint8("iwarp_ext.job.msg.version", "Version", base.DEC),
	jmsg_role    = ProtoField.string("iwarp_ext.job.msg.role", "Role"),
	jmsg_mac     = ProtoField.bytes("iwarp_ext.job.msg.mac", "HMAC-SHA256 proof"),
	-- RDM header
	rdm          = ProtoField.none("iwarp_ext.rdm.hdr", "RDM header"),
	rdm_op       = ProtoField.uint8("iwarp_ext.rdm.op", "Operation", base.DEC, rdm_ops),
	rdm_flags    = ProtoField.uint8("iwarp_ext.rdm.flags", "Flags", base.HEX),
	rdm_f_tagged = ProtoField.bool("iwarp_ext.rdm.flags.tagged", "Tagged", 8, nil, 0x01),
	rdm_f_data   = ProtoField.bool("iwarp_ext.rdm.flags.data", "Remote CQ data present", 8, nil, 0x02),
	rdm_f_error  = ProtoField.bool("iwarp_ext.rdm.flags.error", "Receiver failed", 8, nil, 0x04),
	rdm_credits  = ProtoField.uint16("iwarp_ext.rdm.credits", "Credits returned", base.DEC),
	rdm_len      = ProtoField.uint32("iwarp_ext.rdm.len", "Message length", base.DEC),
	rdm_msg_id   = ProtoField.uint32("iwarp_ext.rdm.msg_id", "Message id", base.DEC),
	rdm_stag     = ProtoField.uint32("iwarp_ext.rdm.stag", "STag", base.HEX),
	rdm_tag      = ProtoField.uint64("iwarp_ext.rdm.tag", "Tag", base.HEX),
	rdm_data     = ProtoField.uint64("iwarp_ext.rdm.data", "Data", base.HEX),
	rdm_addr     = ProtoField.uint64("iwarp_ext.rdm.addr", "Address", base.HEX),
	rdm_at_op    = ProtoField.uint8("iwarp_ext.rdm.atomic.op", "Atomic operation", base.DEC, fi_ops),
	rdm_at_dt    = ProtoField.uint8("iwarp_ext.rdm.atomic.datatype", "Datatype", base.DEC, fi_types),
	rdm_at_fetch = ProtoField.bool("iwarp_ext.rdm.atomic.fetch", "Values come back"),
	rdm_at_count = ProtoField.uint64("iwarp_ext.rdm.atomic.count", "Elements", base.DEC),
	rdm_errno    = ProtoField.uint64("iwarp_ext.rdm.errno", "FI errno", base.DEC),
	rdm_payload  = ProtoField.bytes("iwarp_ext.rdm.payload", "Payload"),
	rdm_paylen   = ProtoField.uint32("iwarp_ext.rdm.payload_len", "Payload length", base.DEC),
	rdm_rts_in   = ProtoField.framenum("iwarp_ext.rdm.rts_in", "RTS in frame", base.NONE, frametype.REQUEST),
	rdm_fin_in   = ProtoField.framenum("iwarp_ext.rdm.fin_in", "FIN in frame", base.NONE, frametype.RESPONSE),
	rdm_areq_in  = ProtoField.framenum("iwarp_ext.rdm.areq_in", "AREQ in frame", base.NONE, frametype.REQUEST),
	rdm_aresp_in = ProtoField.framenum("iwarp_ext.rdm.aresp_in", "ARESP in frame", base.NONE, frametype.RESPONSE),
	-- RFC 7306
	x_op         = ProtoField.uint8("iwarp_ext.rfc7306.opcode", "RFC 7306 operation", base.HEX, rdmap_names),
	x_qn         = ProtoField.uint32("iwarp_ext.rfc7306.qn", "Queue number", base.DEC),
	x_msn        = ProtoField.uint32("iwarp_ext.rfc7306.msn", "Message sequence number", base.DEC),
	x_imm        = ProtoField.uint64("iwarp_ext.imm.data", "Immediate Data", base.HEX),
	at_aop       = ProtoField.uint8("iwarp_ext.atomic.op", "Atomic operation", base.DEC, aop_names),
	at_req_id    = ProtoField.uint32("iwarp_ext.atomic.req_id", "Request identifier", base.DEC),
	at_stag      = ProtoField.uint32("iwarp_ext.atomic.stag", "Remote STag", base.HEX),
	at_to        = ProtoField.uint64("iwarp_ext.atomic.to", "Remote tagged offset", base.HEX),
	at_add       = ProtoField.uint64("iwarp_ext.atomic.add", "Add data", base.HEX),
	at_add_mask  = ProtoField.uint64("iwarp_ext.atomic.add_mask", "Add mask", base.HEX),
	at_swap      = ProtoField.uint64("iwarp_ext.atomic.swap", "Swap data", base.HEX),
	at_swap_mask = ProtoField.uint64("iwarp_ext.atomic.swap_mask", "Swap mask", base.HEX),
	at_cmp       = ProtoField.uint64("iwarp_ext.atomic.compare", "Compare data", base.HEX),
	at_cmp_mask  = ProtoField.uint64("iwarp_ext.atomic.compare_mask", "Compare mask", base.HEX),
	at_orig      = ProtoField.uint64("iwarp_ext.atomic.orig", "Original remote data", base.HEX),
	at_req_in    = ProtoField.framenum("iwarp_ext.atomic.request_in", "Request in frame", base.NONE, frametype.REQUEST),
	at_resp_in   = ProtoField.framenum("iwarp_ext.atomic.response_in", "Response in frame", base.NONE, frametype.RESPONSE),
}
local fl = {}
for _, f in pairs(F) do fl[#fl + 1] = f end
p.fields = fl

local E = {
	short_pd = ProtoExpert.new("iwarp_ext.short_pd", "Enhanced MPA frame with fewer than 4 octets of private data",
		expert.group.MALFORMED, expert.severity.ERROR),
	bad_rdm_pd = ProtoExpert.new("iwarp_ext.rdm.bad_pd", "RDM connection data shorter than 32 octets",
		expert.group.MALFORMED, expert.severity.ERROR),
	rdm_len = ProtoExpert.new("iwarp_ext.rdm.len_mismatch", "EAGER payload length differs from the header's length",
		expert.group.PROTOCOL, expert.severity.WARN),
	rdm_credits = ProtoExpert.new("iwarp_ext.rdm.too_many_credits", "More than 64 credits",
		expert.group.PROTOCOL, expert.severity.WARN),
	truncated = ProtoExpert.new("iwarp_ext.truncated", "Header truncated",
		expert.group.MALFORMED, expert.severity.ERROR),
}
p.experts = { E.short_pd, E.bad_rdm_pd, E.rdm_len, E.rdm_credits, E.truncated }

p.prefs.rdm_any = Pref.bool("Decode RDM headers without setup",
	false, "Decode the RDM header on every untagged Send, also on connections whose MPA Request was not captured")

---------------------------------------------------------------------------
-- Wireshark's fields this script reads

local f_stream    = Field.new("tcp.stream")
local f_key_req   = Field.new("iwarp_mpa.key.req")
local f_key_rep   = Field.new("iwarp_mpa.key.rep")
local f_res       = Field.new("iwarp_mpa.res")
local f_rev       = Field.new("iwarp_mpa.rev")
local f_pd        = Field.new("iwarp_mpa.privatedata")
local f_opcode    = Field.new("iwarp_rdma.opcode")
local f_tagged    = Field.new("iwarp_ddp.tagged_flag")

-- Per-capture state, filled in the first pass (frames in order):
--   rdm[stream]        the stream's MPA Request carried RDM connection data
--   pair[key]          frame numbers for RTS/FIN, AREQ/ARESP and RFC 7306
--                      request/response pairing
local rdm, pair = {}, {}
function p.init()
	rdm, pair = {}, {}
end

local function last(ex)
	local all = { ex() }
	return all[#all]
end

local function stream_id()
	local s = last(f_stream)
	return s and s.value or -1
end

-- the field info of `list` nearest before offset `off` in the same data
-- source as `fi`
local function before(list, fi)
	local best
	for _, x in ipairs(list) do
		if x.offset <= fi.offset and (not best or x.offset > best.offset) then
			best = x
		end
	end
	return best
end

---------------------------------------------------------------------------
-- JOB-KEY HANDSHAKE: with a job key, each side's MPA private data starts
-- (after RFC 6581's 4 octets) with a 24-octet auth block, "IWAK", version,
-- flags, 2 reserved, a 16-octet nonce; from version 2 the Reply's block
-- goes on with the responder's 32-octet proof. The initiator's first Send
-- (version 1: each side's) is a 40-octet auth message, "IWAM", version,
-- role 'I'/'R', 2 reserved, then the proof. A proof is
-- HMAC-SHA256(key, "iwarp auth <version>" | role | nonce_I | nonce_R).
local JOB_MAGIC, JMSG_MAGIC = 0x4957414b, 0x4957414d

-- The auth block at the start of range: octets consumed (0: none there)
local function dissect_job_key(range, pinfo, tree, is_req)
	if range:len() < 24 or range(0, 4):uint() ~= JOB_MAGIC then
		return 0
	end
	local proof = not is_req and range(4, 1):uint() >= 2 and range:len() >= 56
	local len = proof and 56 or 24
	local t = tree:add(F.job, range(0, len))
	t:add(F.job_magic, range(0, 4)):append_text(" (\"IWAK\")")
	t:add(F.job_version, range(4, 1))
	t:add(F.job_flags, range(5, 1))
	t:add(F.job_nonce, range(8, 16))
	t:append_text(", nonce " .. range(8, 16):bytes():tohex())
	if proof then
		t:add(F.job_role, "R (responder)"):set_generated()
		t:add(F.job_mac, range(24, 32))
		t:append_text(", the responder's proof")
	end
	pinfo.cols.info:append(proof and " JOBKEY proof R" or " JOBKEY")
	return len
end

-- A Send payload that is an auth message: true when it was one
local function dissect_job_msg(tvb, pinfo, tree)
	if tvb:len() ~= 40 or tvb(0, 4):uint() ~= JMSG_MAGIC then
		return false
	end
	local role = string.char(tvb(5, 1):uint())
	local t = tree:add(p, tvb(0, 40))
	t:set_text("iWARP extensions: job-key auth message, role " .. role)
	local m = t:add(F.jmsg, tvb(0, 40))
	m:add(F.jmsg_magic, tvb(0, 4)):append_text(" (\"IWAM\")")
	m:add(F.jmsg_version, tvb(4, 1))
	m:add(F.jmsg_role, tvb(5, 1), role == "I" and "I (initiator)" or
		role == "R" and "R (responder)" or role)
	m:add(F.jmsg_mac, tvb(8, 32))
	pinfo.cols.info:append(" JOBKEY proof " .. role)
	return true
end
---------------------------------------------------------------------------

-- RDM connection data: 32 octets (see fi_iwarp(7), RDM WIRE FORMAT)
local function dissect_rdm_pd(r, pinfo, tree, is_req)
	local t = tree:add(F.pd, r(0, math.min(r:len(), 32)))
	if r:len() < 32 then
		t:add_proto_expert_info(E.bad_rdm_pd)
		return nil
	end
	local v = r(4, 1):uint()
	t:add(F.pd_magic, r(0, 4)):append_text(" (\"IWRD\")")
	local vt = t:add(F.pd_vbyte, r(4, 1))
	vt:add(F.pd_collision, r(4, 1))
	vt:add(F.pd_rfc7306, r(4, 1))
	vt:add(F.pd_keyref, r(4, 1))
	vt:add(F.pd_shm, r(4, 1))
	vt:add(F.pd_wide, r(4, 1))
	vt:add(F.pd_version, r(4, 1))
	local fam = r(5, 1):uint()
	t:add(F.pd_family, r(5, 1))
	t:add(F.pd_port, r(6, 2))
	if fam == 6 then
		t:add(F.pd_addr6, r(8, 16))
	else
		t:add(F.pd_addr4, r(8, 4))
	end
	t:add(F.pd_instance, r(24, 8))
	local who = (fam == 6 and tostring(r(8, 16):ipv6()) or tostring(r(8, 4):ipv4())) .. ":" .. r(6, 2):uint()
	t:append_text(", " .. who .. ", instance 0x" .. r(24, 8):uint64():tohex())
	if bit.band(v, 0x80) ~= 0 then t:append_text(", collision") end
	if bit.band(v, 0x40) ~= 0 then t:append_text(", RFC 7306") end
	if r:len() > 32 then
		tree:add(F.pd_extra, r(32))
	end
	return who, v
end

-- RFC 6581 enhanced data and what follows it, for one MPA Request/Reply
local function dissect_setup(pdfi, keyfi, pinfo, tree)
	local is_req = keyfi and keyfi.name == "iwarp_mpa.key.req"
	local rev, res = last(f_rev), last(f_res)
	local enhanced = rev and rev.value == 2 and res and bit.band(res.value, 0x10) ~= 0
	local r = pdfi.range
	local t = tree:add(p, r)
	t:set_text("iWARP extensions: " .. (is_req and "MPA Request" or "MPA Reply"))
	t:add(F.setup, is_req and "Request" or "Reply"):set_generated()
	t:add(F.enhanced, enhanced and true or false):set_generated()
	local off = 0
	if enhanced then
		if r:len() < 4 then
			t:add_proto_expert_info(E.short_pd)
			return
		end
		local w1, w2 = r(0, 2):uint(), r(2, 2):uint()
		local it = t:add(F.ird_word, r(0, 2))
		it:add(F.p2p, r(0, 2))
		it:add(F.rtr_send, r(0, 2))
		it:add(F.ird, r(0, 2))
		local ot = t:add(F.ord_word, r(2, 2))
		ot:add(F.rtr_write, r(2, 2))
		ot:add(F.rtr_read, r(2, 2))
		ot:add(F.ord, r(2, 2))
		local rtr = {}
		if bit.band(w1, 0x4000) ~= 0 then rtr[#rtr + 1] = "Send" end
		if bit.band(w2, 0x8000) ~= 0 then rtr[#rtr + 1] = "Write" end
		if bit.band(w2, 0x4000) ~= 0 then rtr[#rtr + 1] = "Read" end
		local rs = #rtr > 0 and table.concat(rtr, ",") or "none"
		t:add(F.rtr, rs):set_generated()
		local info = string.format(" IRD %d ORD %d%s RTR %s", bit.band(w1, 0x3fff),
			bit.band(w2, 0x3fff), bit.band(w1, 0x8000) ~= 0 and " P2P" or "", rs)
		t:append_text(":" .. info)
		pinfo.cols.info:append(info)
		off = 4
	end
	if r:len() <= off then return end
	off = off + dissect_job_key(r(off), pinfo, t, is_req)
	if r:len() <= off then return end
	local rest = r(off)
	if rest:len() >= 4 and rest(0, 4):uint() == 0x49575244 then
		local who, v = dissect_rdm_pd(rest, pinfo, t, is_req)
		if who then
			pinfo.cols.info:append(" RDM " .. who ..
				(bit.band(v, 0x80) ~= 0 and " collision" or ""))
			if is_req and not pinfo.visited then
				rdm[stream_id()] = pinfo.number
			end
		end
	else
		t:add(F.ulp_pd, rest)
	end
end

-- RFC 7306 operations, read from the DDP segment's own octets
local function u64hex(r) return "0x" .. r:uint64():tohex() end

local function dissect_7306(opfi, pinfo, tree)
	local op = opfi.value
	local src = opfi.source
	local base = opfi.offset - 1 -- the DDP control octet
	local len = src:len() - base
	local t = tree:add(p, opfi.range)
	t:set_text("iWARP extensions: RFC 7306 " .. rdmap_names[op])
	t:add(F.x_op, opfi.range, op)
	if len < 18 then
		t:add_proto_expert_info(E.truncated)
		return
	end
	local h = src:range(base, math.min(len, 18))
	t:add(F.x_qn, h(6, 4))
	t:add(F.x_msn, h(10, 4))
	local s = stream_id()
	if op == 0x8 or op == 0x9 then
		if len < 26 then t:add_proto_expert_info(E.truncated) return end
		local d = src:range(base + 18, 8)
		t:add(F.x_imm, d)
		pinfo.cols.info:append(" ImmData=" .. u64hex(d))
	elseif op == 0xa then
		if len < 18 + 52 then t:add_proto_expert_info(E.truncated) return end
		local a = src:range(base + 18, 52)
		local aop = bit.band(a(0, 4):uint(), 0xf)
		t:add(F.at_aop, a(3, 1), aop)
		t:add(F.at_req_id, a(4, 4))
		t:add(F.at_stag, a(8, 4))
		t:add(F.at_to, a(12, 8))
		if aop == 0 then
			t:add(F.at_add, a(20, 8))
			t:add(F.at_add_mask, a(28, 8))
			pinfo.cols.info:append(" FetchAdd add=" .. u64hex(a(20, 8)))
		else
			t:add(F.at_swap, a(20, 8))
			t:add(F.at_swap_mask, a(28, 8))
			t:add(F.at_cmp, a(36, 8))
			t:add(F.at_cmp_mask, a(44, 8))
			pinfo.cols.info:append(" " .. (aop_names[aop] or ("AOp " .. aop)) ..
				" compare=" .. u64hex(a(36, 8)) .. " swap=" .. u64hex(a(20, 8)))
		end
		local key = "7306:" .. s .. ":" .. pinfo.src_port .. ":" .. a(4, 4):uint()
		if not pinfo.visited then pair[key .. ":req"] = pinfo.number end
		if pair[key .. ":resp"] then
			t:add(F.at_resp_in, pair[key .. ":resp"]):set_generated()
		end
	elseif op == 0xb then
		if len < 18 + 12 then t:add_proto_expert_info(E.truncated) return end
		local a = src:range(base + 18, 12)
		t:add(F.at_req_id, a(0, 4))
		t:add(F.at_orig, a(4, 8))
		pinfo.cols.info:append(" orig=" .. u64hex(a(4, 8)))
		local key = "7306:" .. s .. ":" .. pinfo.dst_port .. ":" .. a(0, 4):uint()
		if not pinfo.visited then pair[key .. ":resp"] = pinfo.number end
		if pair[key .. ":req"] then
			t:add(F.at_req_in, pair[key .. ":req"]):set_generated()
		end
	end
end

-- The postdissector: MPA Request/Reply private data, RFC 7306 operations
local function post(tvb, pinfo, tree)
	local pds = { f_pd() }
	if #pds > 0 then
		local keys = {}
		for _, k in ipairs({ f_key_req() }) do keys[#keys + 1] = k end
		for _, k in ipairs({ f_key_rep() }) do keys[#keys + 1] = k end
		for _, pdfi in ipairs(pds) do
			dissect_setup(pdfi, before(keys, pdfi), pinfo, tree)
		end
	end
	for _, opfi in ipairs({ f_opcode() }) do
		if rdmap_names[opfi.value] then
			dissect_7306(opfi, pinfo, tree)
		end
	end
end
p.dissector = post
register_postdissector(p)

---------------------------------------------------------------------------
-- The RDM header: a heuristic on iwarp_ddp_rdmap's payload (the payload
-- of a Send, reassembled by Wireshark when it spans DDP segments)

local function dissect_rdm(tvb, pinfo, tree)
	local s = stream_id()
	local tg = last(f_tagged)
	if not tg or tg.value then return false end -- tagged: Write/Read data
	local op = last(f_opcode)
	if not op or op.value < 3 or op.value > 6 then return false end -- Sends
	if dissect_job_msg(tvb, pinfo, tree) then return true end
	if not rdm[s] and not p.prefs.rdm_any then return false end
	if tvb:len() < 40 then return false end
	local o = tvb(0, 1):uint()
	if not rdm_ops[o] then return false end

	local t = tree:add(p, tvb(0, 40))
	t:set_text("iWARP extensions: RDM " .. rdm_ops[o])
	local h = t:add(F.rdm, tvb(0, 40))
	h:add(F.rdm_op, tvb(0, 1))
	local ft = h:add(F.rdm_flags, tvb(1, 1))
	ft:add(F.rdm_f_tagged, tvb(1, 1))
	ft:add(F.rdm_f_data, tvb(1, 1))
	ft:add(F.rdm_f_error, tvb(1, 1))
	local cr = h:add(F.rdm_credits, tvb(2, 2))
	if tvb(2, 2):uint() > 64 then cr:add_proto_expert_info(E.rdm_credits) end
	h:add(F.rdm_len, tvb(4, 4))
	h:add(F.rdm_msg_id, tvb(8, 4))
	h:add(F.rdm_stag, tvb(12, 4))
	local tag = h:add(F.rdm_tag, tvb(16, 8))
	h:add(F.rdm_data, tvb(24, 8))
	h:add(F.rdm_addr, tvb(32, 8))
	local flags = tvb(1, 1):uint()
	local len = tvb(4, 4):uint()
	local id = tvb(8, 4):uint()
	local info = " RDM " .. rdm_ops[o]
	if bit.band(flags, 1) ~= 0 then info = info .. " tag=0x" .. tvb(16, 8):uint64():tohex() end
	if o == 1 or o == 2 then info = info .. " len=" .. len end
	if o == 5 or bit.band(flags, 2) ~= 0 then
		info = info .. " data=0x" .. tvb(24, 8):uint64():tohex()
	end
	if o == 6 then
		local tv = tvb(16, 8):uint64()
		tag:add(F.rdm_at_op, tvb(23, 1))
		tag:add(F.rdm_at_dt, tvb(22, 1))
		tag:add(F.rdm_at_fetch, tvb(21, 1), bit.band(tvb(21, 1):uint(), 1) ~= 0)
		h:add(F.rdm_at_count, tvb(24, 8))
		local aop, adt = tvb(23, 1):uint(), tvb(22, 1):uint()
		info = info .. " " .. (fi_ops[aop] or aop) .. " " .. (fi_types[adt] or adt)
	end
	if (o == 3 or o == 7) and bit.band(flags, 4) ~= 0 then
		h:add(F.rdm_errno, tvb(24, 8))
		info = info .. " error"
	end
	local paylen = tvb:len() - 40
	local pl = h:add(F.rdm_paylen, paylen):set_generated()
	if paylen > 0 then t:add(F.rdm_payload, tvb(40)) end
	if o == 1 and paylen ~= len then pl:add_proto_expert_info(E.rdm_len) end
	if bit.band(tvb(2, 2):uint(), 0xffff) > 0 then
		info = info .. " credits=" .. tvb(2, 2):uint()
	end

	-- pairing: RTS -> FIN (the reader answers), AREQ -> ARESP
	local mine = "rdm:" .. s .. ":" .. pinfo.src_port .. ":" .. id
	local theirs = "rdm:" .. s .. ":" .. pinfo.dst_port .. ":" .. id
	if o == 2 or o == 6 then
		if not pinfo.visited then pair[mine .. ":" .. o] = pinfo.number end
		local back = pair[mine .. ":" .. (o + 1)]
		if back then h:add(o == 2 and F.rdm_fin_in or F.rdm_aresp_in, back):set_generated() end
	elseif o == 3 or o == 7 then
		if not pinfo.visited then pair[theirs .. ":" .. o] = pinfo.number end
		local req = pair[theirs .. ":" .. (o - 1)]
		if req then h:add(o == 3 and F.rdm_rts_in or F.rdm_areq_in, req):set_generated() end
	end
	pinfo.cols.info:append(info)
	return true
end
p:register_heuristic("iwarp_ddp_rdmap", dissect_rdm)

"""experiments.probes.cupti_kernels reads CUPTI activity records by offset; checked here on a hand-built buffer laid out
as
CUPTI lays its records (the offsets were checked on the H200 against torch.profiler: results/calls/2026-12-01-call23-26-
profiler-overhead)."""
import ctypes

from experiments.launch.profiler import union_ns
from experiments.probes import cupti_kernels as ck


def _buffer(records):
    """(buffer, addresses) for RECORDS [(kind, start, end, size)], each 8-byte aligned."""
    total = sum(size for *_, size in records)
    buf = (ctypes.c_uint64 * (total // 8))()
    base, addrs, off = ctypes.addressof(buf), [], 0
    for kind, start, end, size in records:
        a = base + off
        ctypes.c_uint32.from_address(a).value = kind
        ctypes.c_uint64.from_address(a + ck.START_OFFSET).value = start
        ctypes.c_uint64.from_address(a + ck.END_OFFSET).value = end
        addrs.append(a)
        off += size
    return buf, addrs


def _fake_next_record(addrs):
    """A cuptiActivityGetNextRecord stand-in: hands out ADDRS, then CUPTI_ERROR_MAX_LIMIT_REACHED."""
    it = iter(addrs)

    def next_record(buffer, valid, rec_ref):
        a = next(it, None)
        if a is None:
            return ck.CUPTI_ERROR_MAX_LIMIT_REACHED
        rec_ref._obj.value = a
        return ck.CUPTI_SUCCESS
    return next_record


def test_spans_and_counts_of_kernel_copy_and_memset_records_only():
    # a kernel (1.341118 ms, the H200's 8192^2 matmul), a memset, a runtime-API record (kind 5: counted, no span),
    # a memcpy overlapping the kernel
    recs = [(10, 1_000_000, 2_341_118, 160), (2, 2_400_000, 2_400_992, 64), (5, 2_500_000, 2_600_000, 40 + 8),
            (1, 2_000_000, 2_100_000, 64)]
    buf, addrs = _buffer(recs)
    spans, counts = ck.spans_of(ck.iter_records(_fake_next_record(addrs), ctypes.addressof(buf), 999))
    assert spans == [(1_000_000, 2_341_118), (2_400_000, 2_400_992), (2_000_000, 2_100_000)]
    assert counts == {"CONCURRENT_KERNEL": 1, "MEMSET": 1, "5": 1, "MEMCPY": 1}
    # GPU busy = union: the copy inside the kernel counts once; 1,341,118 + 992 ns
    assert union_ns(spans) == 1_342_110


def test_an_empty_buffer_gives_nothing():
    spans, counts = ck.spans_of(ck.iter_records(_fake_next_record([]), 0, 0))
    assert spans == [] and counts == {}


def test_libcupti_candidates_honour_the_override(monkeypatch):
    monkeypatch.setenv("CUPTI_LIB", "/opt/cuda/lib64/libcupti.so.13")
    assert ck.libcupti_candidates() == ["/opt/cuda/lib64/libcupti.so.13"]
    monkeypatch.delenv("CUPTI_LIB")
    assert ck.libcupti_candidates()[-3:] == ["libcupti.so.13", "libcupti.so.12", "libcupti.so"]

"""Row ops a model needs around its layers: gather rows (embedding lookup, last-token selection), add a bias row,
row argmax (greedy decoding) and a temperature softmax (sampling).

gather_rows and add_bias are exact (a copy, one rounding of the sum); argmax_rows returns the first index of the
row maximum, as torch.argmax / np.argmax do; softmax_rows works in fp32 (bound 1e-6 relative + 1e-7 absolute
against the float64 reference for rows up to 256k).
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import cdiv, jit, next_power_of_2
from kernels._common import dtype_name, float_array, random_array, tolerance
from kernels.registry import Case, register

BLOCK_COLS = 1024  # columns a program handles per step of its row loop


@jit
def _gather_rows_kernel(table_ptr, index_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    src = tl.load(index_ptr + row).to(tl.int64)
    ok = (cols < n_cols) & (src >= 0) & (src < n_rows)
    values = tl.load(table_ptr + src * n_cols + cols, mask=ok)
    tl.store(out_ptr + row.to(tl.int64) * n_cols + cols, values, mask=cols < n_cols)


@jit
def _add_bias_kernel(x_ptr, b_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
    tl.store(out_ptr + row * n_cols + cols, (x + b).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def _argmax_rows_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    best = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
    best_idx = cols
    for start in range(BLOCK, n_cols, BLOCK):
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=start + cols < n_cols,
                    other=float("-inf")).to(tl.float32)
        better = x > best  # strict: an equal value later in the row keeps the earlier index
        best = tl.where(better, x, best)
        best_idx = tl.where(better, start + cols, best_idx)
    top = tl.max(best, axis=0)
    first = tl.min(tl.where(best == top, best_idx, n_cols), axis=0)
    tl.store(out_ptr + row, first)


@jit
def _softmax_rows_kernel(x_ptr, out_ptr, n_cols, inv_temperature, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    running = tl.full((BLOCK,), float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        running = tl.maximum(running, x.to(tl.float32) * inv_temperature)
    top = tl.max(running, axis=0)
    total = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        total += tl.exp(x.to(tl.float32) * inv_temperature - top)
    inv_total = 1.0 / tl.sum(total, axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=mask, other=float("-inf"))
        tl.store(out_ptr + row * n_cols + start + cols, tl.exp(x.to(tl.float32) * inv_temperature - top) * inv_total,
                 mask=mask)


@jit
def _top_p_kernel(p_ptr, u_ptr, out_ptr, n_cols, top_p, N_STEPS: tl.constexpr, BLOCK: tl.constexpr):
    """Bisect the largest threshold t whose mass of probs >= t reaches top_p, then draw in index order."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    base = p_ptr + row * n_cols
    running = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        running = tl.maximum(running, tl.load(base + start + cols, mask=start + cols < n_cols, other=0.0))
    hi = tl.max(running, axis=0)
    lo = hi * 0.0  # t = 0 keeps the whole row (the host passes top_p = 2, never reached, for top_p = 1)
    for _ in range(0, N_STEPS):
        mid = lo + (hi - lo) * 0.5
        mass = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n_cols, BLOCK):
            p = tl.load(base + start + cols, mask=start + cols < n_cols, other=0.0)
            mass += tl.where(p >= mid, p, 0.0)
        lo = tl.where(tl.sum(mass, axis=0) >= top_p, mid, lo)
        hi = tl.where(tl.sum(mass, axis=0) >= top_p, hi, mid)
    top_mass = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        p = tl.load(base + start + cols, mask=start + cols < n_cols, other=0.0)
        top_mass += tl.where(p >= hi, p, 0.0)
    t = tl.where(tl.sum(top_mass, axis=0) >= top_p, hi, lo)  # the most likely token is always kept
    kept_total = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        p = tl.load(base + start + cols, mask=start + cols < n_cols, other=0.0)
        kept_total += tl.where(p >= t, p, 0.0)
    target = tl.load(u_ptr + row) * tl.sum(kept_total, axis=0)
    carry = target * 0.0
    choice = n_cols
    last = -1
    for start in range(0, n_cols, BLOCK):
        inside = start + cols < n_cols
        p = tl.load(base + start + cols, mask=inside, other=0.0)
        keep = (p >= t) & inside
        acc = tl.cumsum(tl.where(keep, p, 0.0), axis=0) + carry
        choice = tl.minimum(choice, tl.min(tl.where(keep & (acc > target), start + cols, n_cols), axis=0))
        last = tl.maximum(last, tl.max(tl.where(keep, start + cols, -1), axis=0))
        carry += tl.sum(tl.where(keep, p, 0.0), axis=0)
    tl.store(out_ptr + row, tl.where(choice < n_cols, choice, last))


def _block(n_cols: int) -> int:
    return min(BLOCK_COLS, next_power_of_2(max(n_cols, 16)))


def gather_rows(table: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """out[i] = table[indices[i]] for a 2-D table (any dtype of 2 or 4 bytes); indices must be in range."""
    if not isinstance(table, np.ndarray) or table.ndim != 2:
        raise ValueError(f"gather_rows: table must be a 2-D numpy array, got {getattr(table, 'shape', type(table))}")
    table = np.ascontiguousarray(table)
    idx = np.ascontiguousarray(indices, dtype=np.int32).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= table.shape[0]):
        raise ValueError(f"gather_rows: indices must lie in [0, {table.shape[0]}), got {idx.min()}..{idx.max()}")
    out = np.empty((idx.size, table.shape[1]), table.dtype)
    if out.size:
        block = _block(table.shape[1])
        _gather_rows_kernel[(idx.size, cdiv(table.shape[1], block))](table, idx, out, table.shape[0], table.shape[1],
                                                                      BLOCK=block)
    return out


def add_bias(x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """x + bias over the last dim (fp32 add, one rounding to x's dtype): a Linear layer's bias."""
    x = float_array(x, "x", ndim=2)
    b = float_array(bias, "bias", ndim=1)
    if b.shape[0] != x.shape[1]:
        raise ValueError(f"add_bias: bias has {b.shape[0]} entries, x has {x.shape[1]} columns")
    out = np.empty_like(x)
    if x.size:
        block = _block(x.shape[1])
        _add_bias_kernel[(x.shape[0], cdiv(x.shape[1], block))](x, b, out, x.shape[1], BLOCK=block)
    return out


def argmax_rows(x: np.ndarray) -> np.ndarray:
    """int32 index of each row's maximum (the first one on ties), for greedy decoding."""
    x = float_array(x, "x", ndim=2)
    if x.shape[1] == 0:
        raise ValueError("argmax_rows: rows must not be empty")
    out = np.empty(x.shape[0], np.int32)
    if x.shape[0]:
        _argmax_rows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=_block(x.shape[1]))
    return out


def softmax_rows(x: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """fp32 softmax(x / temperature) of each row (temperature > 0), for sampling."""
    x = float_array(x, "x", ndim=2)
    if not temperature > 0:
        raise ValueError(f"softmax_rows: temperature must be > 0, got {temperature}")
    out = np.empty(x.shape, np.float32)
    if x.size:
        _softmax_rows_kernel[(x.shape[0],)](x, out, x.shape[1], float(1.0 / temperature), BLOCK=_block(x.shape[1]))
    return out


def softmax_rows_reference(x, temperature=1.0):
    z = np.asarray(x, np.float64) / temperature
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


TOP_P_STEPS = 64  # fp32 bisection steps of the threshold: the interval shrinks to 2^-64 of the row maximum


def top_p_sample(probs: np.ndarray, top_p: float, u: np.ndarray) -> np.ndarray:
    """int32 id per row drawn from the nucleus of fp32 probabilities [N, vocab] (transformers' TopPLogitsWarper:
    the smallest set of most likely tokens whose mass reaches top_p; every token tied with the smallest kept
    probability is kept too) with one uniform u in [0, 1) per row: the first kept token in index order whose
    running kept mass exceeds u * kept mass."""
    probs = float_array(probs, "probs", ndim=2)
    if probs.dtype != np.float32:
        raise ValueError(f"top_p_sample: probs must be float32, got {probs.dtype}")
    if probs.shape[1] == 0:
        raise ValueError("top_p_sample: probs rows must not be empty")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p_sample: top_p must lie in (0, 1], got {top_p}")
    u = np.ascontiguousarray(u, dtype=np.float32).reshape(-1)
    if u.size != probs.shape[0]:
        raise ValueError(f"top_p_sample: u has {u.size} entries, probs has {probs.shape[0]} rows")
    if u.size and not (np.all(u >= 0) and np.all(u < 1)):
        raise ValueError("top_p_sample: u must lie in [0, 1)")
    out = np.empty(probs.shape[0], np.int32)
    if probs.shape[0]:
        _top_p_kernel[(probs.shape[0],)](probs, u, out, probs.shape[1], float(top_p) if top_p < 1.0 else 2.0,
                                         N_STEPS=TOP_P_STEPS, BLOCK=_block(probs.shape[1]))
    return out


def top_p_sample_reference(probs, top_p, u):
    """Sort-based float64 nucleus draw with the same tie rule and the same use of u."""
    out = []
    for row, ur in zip(np.asarray(probs, np.float64), np.asarray(u, np.float64).reshape(-1)):
        ordered = np.sort(row)[::-1]
        k = len(row) if top_p >= 1.0 else min(int(np.searchsorted(np.cumsum(ordered), top_p)) + 1, len(row))
        kept = np.where(row >= ordered[k - 1], row, 0.0)
        out.append(int(np.argmax(np.cumsum(kept) > ur * kept.sum())))
    return np.array(out, np.int32)


@register
def _cases():
    rng = np.random.default_rng(5)
    table = random_array(rng, (2048, 256), np.float32)
    ids = rng.integers(0, 2048, 40)
    yield Case("rows.gather", "V=2048 N=256 M=40", "fp32", lambda: gather_rows(table, ids), lambda: table[ids],
               0.0, 0.0, 2 * ids.size * 256 * 4)
    logits = random_array(rng, (3, 5000), np.float32)
    yield Case("rows.argmax", "3x5000", "fp32", lambda: argmax_rows(logits).astype(np.float64),
               lambda: np.argmax(logits, axis=1).astype(np.float64), 0.0, 0.0, logits.nbytes)
    yield Case("rows.softmax", "3x5000 T=0.7", "fp32", lambda: softmax_rows(logits, 0.7),
               lambda: softmax_rows_reference(logits, 0.7), 1e-6, 1e-7, 2 * logits.nbytes)
    x = random_array(rng, (33, 300), np.float32)
    b = random_array(rng, (300,), np.float32)
    yield Case("rows.add_bias", "33x300", dtype_name(np.float32), lambda: add_bias(x, b), lambda: x + b,
               *tolerance(np.float32), 2 * x.nbytes)
    probs = softmax_rows(random_array(rng, (4, 3000), np.float32) * 4, 1.0)
    u = rng.random(4)
    yield Case("rows.top_p", "4x3000 p=0.9", "fp32", lambda: top_p_sample(probs, 0.9, u).astype(np.float64),
               lambda: top_p_sample_reference(probs, 0.9, u).astype(np.float64), 0.0, 0.0, probs.nbytes)

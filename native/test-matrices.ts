/**
 * Matrices and comparisons shared by the kernel tests (native/kernels.test.ts,
 * native/q4xv-amx.test.ts, native/q8xv.test.ts): deterministic inputs, so a failure
 * reproduces, and the two ways those tests judge a kernel's output — bit for bit against
 * another kernel, or within a bound of the f64 product of the dequantized weights.
 */

/** Deterministic normal-ish values in (-2, 2)·scale (a sum of four uniforms). */
export function randomMatrix(count: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = (next() + next() + next() + next() - 2) * scale;
  return out;
}

/** The Euclidean norm of each of the `rows` rows of an [rows × cols] matrix. */
export function norms(m: Float32Array, rows: number, cols: number): Float64Array {
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let k = 0; k < cols; k++) s += m[r * cols + k]! * m[r * cols + k]!;
    out[r] = Math.sqrt(s);
  }
  return out;
}

/**
 * Largest |y - x·Wᵀ| over all outputs, relative to |W_r|·|x_t| (the scale of that dot
 * product), with W the dequantized weights [rows × cols], x [n × cols], y [n × rows], and the
 * product in f64.
 */
export function worstRelativeError(
  y: Float32Array,
  w: Float32Array,
  x: Float32Array,
  rows: number,
  cols: number,
  n: number,
): number {
  const wn = norms(w, rows, cols);
  const xn = norms(x, n, cols);
  let worst = 0;
  for (let t = 0; t < n; t++) {
    for (let r = 0; r < rows; r++) {
      let acc = 0;
      for (let k = 0; k < cols; k++) acc += w[r * cols + k]! * x[t * cols + k]!;
      const e = Math.abs(y[t * rows + r]! - acc) / (wn[r]! * xn[t]! + 1e-30);
      worst = Math.max(worst, Number.isNaN(e) ? Infinity : e);
    }
  }
  return worst;
}

/** The first output (token, row) of two [n × rows] results whose bits differ, or null. */
export function firstDifference(a: Float32Array, b: Float32Array, rows: number): string | null {
  if (a.length !== b.length) return `lengths ${a.length} vs ${b.length}`;
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  const i = ua.findIndex((v, k) => v !== ub[k]);
  return i < 0 ? null : `token ${Math.floor(i / rows)} row ${i % rows}: ${a[i]} vs ${b[i]}`;
}

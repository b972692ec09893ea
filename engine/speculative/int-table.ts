/**
 * A table from int32 keys to positive int32 values, in two typed arrays (open addressing,
 * linear probing, Fibonacci hashing of the key): the store of the n-gram index (ngram.ts).
 * That index is read and grown for every decoding sequence in every step, whether drafts are
 * sent or not, so its cost is paid even by open-ended chat at 16 sequences, where nothing is
 * drafted. A `Map` with number keys cost ~60-100 ns an operation there and kept every entry
 * in the V8 heap for the collector to trace; here an operation is a few array reads and the
 * entries live in typed arrays' backing stores, outside the traced heap.
 */
export class IntTable {
  private keys: Int32Array;
  /** 0: an empty slot (values are at least 1). */
  private values: Int32Array;
  private bits: number;
  private size = 0;

  constructor(capacity = 64) {
    this.bits = Math.max(4, Math.ceil(Math.log2(Math.max(1, capacity) * 2)));
    this.keys = new Int32Array(1 << this.bits);
    this.values = new Int32Array(1 << this.bits);
  }

  /** The value last set for `key`, or 0 when none was. */
  get(key: number): number {
    const mask = (1 << this.bits) - 1;
    for (let i = this.slot(key); ; i = (i + 1) & mask) {
      const v = this.values[i];
      if (v === 0 || this.keys[i] === key) return v;
    }
  }

  /** Sets `key` to `value` (an int32 of at least 1), replacing what it held. */
  set(key: number, value: number): void {
    if (!(value >= 1)) throw new RangeError(`IntTable values are at least 1, got ${value}`);
    // Kept at most half full, so that a probe ends after a slot or two.
    if (2 * (this.size + 1) > 1 << this.bits) this.rehash();
    const mask = (1 << this.bits) - 1;
    for (let i = this.slot(key); ; i = (i + 1) & mask) {
      if (this.values[i] === 0) {
        this.keys[i] = key;
        this.values[i] = value;
        this.size++;
        return;
      }
      if (this.keys[i] === key) {
        this.values[i] = value;
        return;
      }
    }
  }

  private slot(key: number): number {
    return Math.imul(key, 0x9e3779b1) >>> (32 - this.bits);
  }

  private rehash(): void {
    const { keys, values } = this;
    this.bits++;
    this.keys = new Int32Array(1 << this.bits);
    this.values = new Int32Array(1 << this.bits);
    this.size = 0;
    for (let i = 0; i < keys.length; i++) if (values[i] !== 0) this.set(keys[i], values[i]);
  }
}

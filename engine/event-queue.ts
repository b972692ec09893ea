/**
 * A single-consumer async queue: the step loop pushes a request's events, the caller of
 * `generate()` pulls them with `for await`. Ending with an error makes the iterator throw
 * after the events already queued. Breaking out of the loop calls `onReturn` (the engine
 * cancels the request: a caller that goes away frees its blocks).
 */
export class EventQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: ((r: IteratorResult<T>) => void) | null = null;
  private failWaiter: ((e: unknown) => void) | null = null;
  private ended = false;
  private error: unknown = undefined;

  constructor(private readonly onReturn: () => void = () => {}) {}

  push(item: T): void {
    if (this.ended) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = this.failWaiter = null;
      w({ value: item, done: false });
    } else this.items.push(item);
  }

  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    if (this.waiter) {
      const w = this.waiter;
      const f = this.failWaiter!;
      this.waiter = this.failWaiter = null;
      if (error !== undefined) f(error);
      else w({ value: undefined, done: true });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.items.length > 0) return Promise.resolve({ value: this.items.shift()!, done: false });
        if (this.ended) {
          if (this.error !== undefined) {
            const e = this.error;
            this.error = undefined;
            return Promise.reject(e);
          }
          return Promise.resolve({ value: undefined, done: true });
        }
        return new Promise<IteratorResult<T>>((resolve, reject) => {
          this.waiter = resolve;
          this.failWaiter = reject;
        });
      },
      return: () => {
        if (!this.ended) this.onReturn();
        this.ended = true;
        this.items.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

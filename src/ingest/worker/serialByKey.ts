/**
 * Steps run one at a time per key (a partition), in the order they were queued. A step that fails does
 * not stop the next; its caller is told. Keys with nothing queued are forgotten.
 */
export class SerialByKey<K> {
  private readonly last = new Map<K, Promise<void>>();

  run<T>(key: K, step: () => Promise<T>): Promise<T> {
    const run = (this.last.get(key) ?? Promise.resolve()).then(step);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.last.set(key, settled);
    void settled.then(() => {
      if (this.last.get(key) === settled) this.last.delete(key);
    });
    return run;
  }
}

export type TimeUnit = 'ms' | 's';

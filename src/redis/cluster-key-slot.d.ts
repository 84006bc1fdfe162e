/** ioredis's slot function; the package ships no types. It takes a string or its UTF-8 bytes. */
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string | ArrayLike<number>): number;
}

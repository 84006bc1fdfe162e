import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';

/**
 * What keeps a listener from closing: a keep-alive client asking for /metrics every 200 ms, and a
 * connection holding a request head half-sent. Stopped by `stop()`.
 */
export function holdListener(url: string): { stop(): void } {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const ask = () => {
    const r = request(`${url}/metrics`, { agent }, (res) => res.resume());
    r.on('error', () => {});
    r.end();
  };
  ask();
  const timer = setInterval(ask, 200);
  const { hostname, port } = new URL(url);
  const half: Socket = connect(Number(port), hostname);
  half.on('error', () => {});
  half.write('GET /metrics HTTP/1.1\r\nHost: x\r\n');
  return {
    stop() {
      clearInterval(timer);
      agent.destroy();
      half.destroy();
    },
  };
}

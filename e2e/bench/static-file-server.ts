// The stored-file download benchmark's baseline: a plain node:http server that answers every GET with
// one file, piped from fs.createReadStream with its default buffer, as a static server does.
// Run: node --import tsx e2e/bench/static-file-server.ts <port> <file>; prints "listening".
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { pipeline } from 'node:stream/promises';

const [port, file] = process.argv.slice(2);
const server = createServer((req, res) => {
  void stat(file).then(async (info) => {
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': info.size });
    if (req.method === 'HEAD') return res.end();
    await pipeline(createReadStream(file), res).catch(() => res.destroy());
  });
});
server.listen(Number(port), '127.0.0.1', () => console.log('listening'));

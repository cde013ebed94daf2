"""fakeredis's TCP server (a Redis-compatible test server nxlock did not write) on the
loopback port given, for `nxlock check --url` in tests/it/clients.rs."""
import sys

from fakeredis import TcpFakeServer

server = TcpFakeServer(("127.0.0.1", int(sys.argv[1])), server_type="redis")
server.serve_forever()

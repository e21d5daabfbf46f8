# SPDX-License-Identifier: Apache-2.0
"""A gRPC backend for the tests that put sluice between real gRPC peers (Debian's
python3-grpcio on both sides; docs/grpc.md). Messages are raw bytes (no generated code): the
methods of the service `test.Echo` are

    Unary          answers the request itself
    ServerStream   answers N messages "0".."N-1" for a request "N"
    ClientStream   answers the requests joined with "+"
    Bidi           answers each request as it comes
    Fail           fails with the status "CODE:details" the request names, before any message
    Slow           answers after the milliseconds the request names
    Peer           answers the client address it sees (which connection the call came on)
    SlowPeer       answers the client address after the milliseconds the request names

and `grpc.health.v1.Health/Check` of the gRPC Health Checking Protocol, answering the
HealthCheckResponse status in `health` (1 SERVING, 2 NOT_SERVING) for every service.

Each call's invocation metadata `x-echo` comes back as initial metadata, and every answer ends
with trailing metadata `x-trailer: done`. Import with tests/integration/grpc on sys.path."""

import time
from concurrent import futures

import grpc


def _identity(data):
    return data


class Echo(grpc.GenericRpcHandler):
    """The service, as one generic handler."""

    def __init__(self):
        self.calls = 0
        self.health = 1
        self.health_checks = 0

    def service(self, handler_call_details):
        method = handler_call_details.method
        kinds = {
            "/test.Echo/Unary": (grpc.unary_unary_rpc_method_handler, self.unary),
            "/test.Echo/Fail": (grpc.unary_unary_rpc_method_handler, self.fail),
            "/test.Echo/Slow": (grpc.unary_unary_rpc_method_handler, self.slow),
            "/test.Echo/Peer": (grpc.unary_unary_rpc_method_handler, self.peer),
            "/test.Echo/SlowPeer": (grpc.unary_unary_rpc_method_handler, self.slow_peer),
            "/test.Echo/ServerStream": (grpc.unary_stream_rpc_method_handler, self.server_stream),
            "/test.Echo/ClientStream": (grpc.stream_unary_rpc_method_handler, self.client_stream),
            "/test.Echo/Bidi": (grpc.stream_stream_rpc_method_handler, self.bidi),
            "/grpc.health.v1.Health/Check": (grpc.unary_unary_rpc_method_handler, self.check),
        }
        if method not in kinds:
            return None
        make, behaviour = kinds[method]
        return make(behaviour, request_deserializer=_identity, response_serializer=_identity)

    def check(self, request, context):
        self.health_checks += 1
        return bytes([0x08, self.health])  # HealthCheckResponse{status}: field 1, a varint

    def _begin(self, context):
        self.calls += 1
        echo = [(k, v) for k, v in context.invocation_metadata() if k == "x-echo"]
        if echo:
            context.send_initial_metadata(echo)
        context.set_trailing_metadata((("x-trailer", "done"),))

    def unary(self, request, context):
        self._begin(context)
        return request

    def fail(self, request, context):
        self._begin(context)
        code, _, details = request.decode().partition(":")
        context.abort(grpc.StatusCode[code], details)

    def slow(self, request, context):
        self._begin(context)
        time.sleep(int(request.decode()) / 1000.0)
        return request

    def peer(self, request, context):
        self._begin(context)
        return context.peer().encode()

    def slow_peer(self, request, context):
        self._begin(context)
        time.sleep(int(request.decode()) / 1000.0)
        return context.peer().encode()

    def server_stream(self, request, context):
        self._begin(context)
        for i in range(int(request.decode())):
            yield str(i).encode()

    def client_stream(self, request_iterator, context):
        self._begin(context)
        return b"+".join(request_iterator)

    def bidi(self, request_iterator, context):
        self._begin(context)
        for request in request_iterator:
            yield request


def serve(credentials=None, workers=64):
    """(server, port, service): a started server on 127.0.0.1, plain or with `credentials`."""
    service = Echo()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers),
                         options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((service,))
    if credentials is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    return server, port, service


def method(channel, kind, name):
    """A callable for `/test.Echo/<name>` of `kind` (unary_unary, unary_stream, ...)."""
    return getattr(channel, kind)(f"/test.Echo/{name}", request_serializer=_identity,
                                  response_deserializer=_identity)

"""A local fake of the Pinecone data plane: the endpoints the library's adapter uses.

``POST /vectors/upsert``, ``POST /query``, ``POST /vectors/delete`` and
``POST /describe_index_stats`` in Pinecone's JSON wire format (camelCase), with exact
cosine scoring and metadata filters (``{"k": v}``, ``{"k": {"$eq": v}}``, ``$ne``, ``$in``,
``$and``). Requests without an ``Api-Key`` header get a 401 as from Pinecone. Point the SDK
at it with ``AsyncIndex(host=server.host, api_key="test")``.
"""

from __future__ import annotations

import math
import socket
from types import TracebackType
from typing import Any, Self

from aiohttp import web

_BODY = web.RequestKey("body", dict)


_OPS: dict[str, Any] = {
    "$eq": lambda value, arg: value == arg,
    "$ne": lambda value, arg: value != arg,
    "$in": lambda value, arg: value in arg,
}


def _matches(metadata: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    for key, cond in (flt or {}).items():
        if key == "$and":
            if not all(_matches(metadata, sub) for sub in cond):
                return False
            continue
        value = metadata.get(key)
        if not isinstance(cond, dict):
            cond = {"$eq": cond}
        for op, arg in cond.items():
            if op not in _OPS:
                raise ValueError(f"the fake supports {sorted(_OPS)}, not {op}")
            if not _OPS[op](value, arg):
                return False
    return True


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class FakePinecone:
    """Namespaces of vectors in memory; ``requests`` records (path, body) of every call."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.namespaces: dict[str, dict[str, tuple[list[float], dict[str, Any]]]] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def host(self) -> str:
        return f"http://localhost:{self.port}"

    async def __aenter__(self) -> Self:
        app = web.Application(middlewares=[self._auth])
        app.router.add_post("/vectors/upsert", self._upsert)
        app.router.add_post("/query", self._query)
        app.router.add_post("/vectors/delete", self._delete)
        app.router.add_post("/describe_index_stats", self._stats)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not request.headers.get("Api-Key"):
            return web.json_response({"code": 16, "message": "Unauthorized"}, status=401)
        body = await request.json()
        self.requests.append((request.path, body))
        request[_BODY] = body
        return await handler(request)

    async def _upsert(self, request: web.Request) -> web.Response:
        body = request[_BODY]
        space = self.namespaces.setdefault(body.get("namespace", ""), {})
        for vector in body["vectors"]:
            if len(vector["values"]) != self.dimension:
                message = f"Vector dimension {len(vector['values'])} does not match the index"
                return web.json_response({"code": 3, "message": message}, status=400)
            space[vector["id"]] = (vector["values"], vector.get("metadata") or {})
        return web.json_response({"upsertedCount": len(body["vectors"])})

    async def _query(self, request: web.Request) -> web.Response:
        body = request[_BODY]
        namespace = body.get("namespace", "")
        space = self.namespaces.get(namespace, {})
        scored = [
            (_cosine(body["vector"], values), vid, meta)
            for vid, (values, meta) in space.items()
            if _matches(meta, body.get("filter"))
        ]
        scored.sort(key=lambda s: s[0], reverse=True)
        matches = []
        for score, vid, meta in scored[: body["topK"]]:
            match: dict[str, Any] = {"id": vid, "score": score, "values": []}
            if body.get("includeMetadata"):
                match["metadata"] = meta
            matches.append(match)
        return web.json_response({"matches": matches, "namespace": namespace})

    async def _delete(self, request: web.Request) -> web.Response:
        body = request[_BODY]
        space = self.namespaces.get(body.get("namespace", ""), {})
        for vid in body.get("ids") or []:
            space.pop(vid, None)
        if body.get("deleteAll"):
            space.clear()
        return web.json_response({})

    async def _stats(self, request: web.Request) -> web.Response:
        counts = {ns: {"vectorCount": len(v)} for ns, v in self.namespaces.items()}
        return web.json_response(
            {
                "namespaces": counts,
                "dimension": self.dimension,
                "indexFullness": 0.0,
                "totalVectorCount": sum(len(v) for v in self.namespaces.values()),
                "metric": "cosine",
                "vectorType": "dense",
            }
        )

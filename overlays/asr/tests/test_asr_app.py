"""The app entry module with FastAPI and the image's base app replaced by fakes: the route it adds
and how it answers bad uploads (FastAPI is not installed here; in the container it is)."""

import asyncio
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


class HTTPException(Exception):
    def __init__(self, status_code, detail):
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


class BaseApp:
    def __init__(self):
        self.routes = {}

    def post(self, path):
        def add(fn):
            self.routes[("POST", path)] = fn
            return fn

        return add


class Upload:
    def __init__(self, data):
        self.data = data

    async def read(self):
        return self.data


def install_fakes(shared):
    fastapi = types.ModuleType("fastapi")
    fastapi.File = lambda *a, **k: None
    fastapi.UploadFile = Upload
    fastapi.HTTPException = HTTPException
    concurrency = types.ModuleType("fastapi.concurrency")

    async def run_in_threadpool(fn, *args):
        return fn(*args)

    concurrency.run_in_threadpool = run_in_threadpool
    server = types.ModuleType("server")
    server.app = BaseApp()
    sf = types.ModuleType("soundfile")

    def info(buf):
        if buf.getvalue().startswith(b"RIFF"):
            return object()
        raise RuntimeError("Format not recognised.")

    sf.info = info
    diarizer = types.ModuleType("diarizer")
    diarizer.shared = lambda: shared
    sys.modules.update(
        {"fastapi": fastapi, "fastapi.concurrency": concurrency, "server": server, "soundfile": sf, "diarizer": diarizer}
    )
    return server.app


class AppEntry(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.saved = dict(sys.modules)
        cls.seen = []
        shared = types.SimpleNamespace(diarize_chunk=lambda data: cls.seen.append(data) or {"duration": 1.0})
        cls.base = install_fakes(shared)
        sys.modules.pop("asr_app", None)
        import asr_app

        cls.app_module = asr_app

    @classmethod
    def tearDownClass(cls):
        for name in list(sys.modules):
            if name not in cls.saved:
                del sys.modules[name]
        sys.modules.update(cls.saved)

    def handler(self):
        return self.base.routes[("POST", "/v1/audio/diarize-chunk")]

    def test_extends_the_images_app(self):
        self.assertIs(self.app_module.app, self.base)
        self.assertIn(("POST", "/v1/audio/diarize-chunk"), self.base.routes)

    def test_audio_goes_to_the_diarizer(self):
        out = asyncio.run(self.handler()(Upload(b"RIFF....WAVE")))
        self.assertEqual(out, {"duration": 1.0})
        self.assertEqual(self.seen[-1], b"RIFF....WAVE")

    def test_empty_upload_is_400(self):
        with self.assertRaises(HTTPException) as cm:
            asyncio.run(self.handler()(Upload(b"")))
        self.assertEqual(cm.exception.status_code, 400)

    def test_unreadable_audio_is_400_not_500(self):
        # A 500 would read as a wedged asr to deep health; a bad upload is the caller's fault.
        with self.assertRaises(HTTPException) as cm:
            asyncio.run(self.handler()(Upload(b"not audio")))
        self.assertEqual(cm.exception.status_code, 400)
        self.assertIn("unreadable audio", cm.exception.detail)


if __name__ == "__main__":
    unittest.main()

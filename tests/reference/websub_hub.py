"""An independent WebSub hub for the tests: Flask-WebSub's hub (PyPI), whose work runs as
Celery tasks, here run by an eager stand-in, each `.delay` on a thread of its own, retried a
few times as Celery would. It signs deliveries with sha512 (the library's default) and accepts
hub.mode=publish (PUBLISH_SUPPORTED), fetching the topic itself.

Usage: websub_hub.py PORT_FILE -- listens on 127.0.0.1 (a free port), writes the port to
PORT_FILE, logs each request on stderr, and serves until killed.
"""

import os
import sys
import tempfile
import threading
import time
import types

from flask import Flask
from flask_websub.hub import Hub, SQLite3HubStorage
from werkzeug.serving import make_server


class Retry(Exception):
    pass


class EagerTask:
    def __init__(self, f, bind, max_retries):
        self.f, self.bind = f, bind
        self.max_retries = 3 if max_retries is None else min(max_retries, 3)
        self.request = types.SimpleNamespace(retries=0)

    def __call__(self, *a, **k):
        return self.f(self, *a, **k) if self.bind else self.f(*a, **k)

    def delay(self, *a, **k):
        threading.Thread(target=self._run, args=a, kwargs=k, daemon=True).start()

    def _run(self, *a, **k):
        for attempt in range(self.max_retries + 1):
            self.request = types.SimpleNamespace(retries=attempt)
            try:
                return self(*a, **k)
            except Retry:
                time.sleep(0.2)
            except Exception as e:  # what Celery would log
                print(f"task failed: {e!r}", file=sys.stderr, flush=True)
                return None

    def retry(self, countdown=0, **k):
        raise Retry()

    def s(self, *a, **k):
        return None


class EagerCelery:
    def task(self, bind=False, max_retries=None, **opts):
        return lambda f: EagerTask(f, bind, max_retries)

    def add_periodic_task(self, *a, **k):
        pass


app = Flask("hub")
app.config["PUBLISH_SUPPORTED"] = True
db = os.path.join(tempfile.mkdtemp(), "hub.db")
hub = Hub(SQLite3HubStorage(db), EagerCelery(), **app.config)
app.register_blueprint(hub.build_blueprint(url_prefix="/hub"))
server = make_server("127.0.0.1", 0, app, threaded=True)
with open(sys.argv[1], "w") as f:
    f.write(str(server.server_port))
server.serve_forever()

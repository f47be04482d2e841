"""The authentication backend that refuses a locked username and address pair."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend


class LoginLimitBackend(AxesStandaloneBackend):
    """Axes' check before every `authenticate(request=...)`: a locked pair never logs in.

    First in AUTHENTICATION_BACKENDS; it logs nobody in itself. The login paths
    (accounts.throttling) ask the same before trying a password and answer with
    their own 429; this backend makes any other path that passes a request obey the
    lock too. A call without a request (Django's test client.login, a shell) has no
    client address to check and goes on to the next backend, where axes' standalone
    backend would refuse it.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

def authorized(request):
    """`request` with the Ray token, found as Ray's own clients find it: RAY_AUTH_TOKEN (which
    KubeRay gives the pods), then the file RAY_AUTH_TOKEN_PATH names. Unredirected: a redirect
    to another host does not carry it."""
    token = os.environ.get("RAY_AUTH_TOKEN", "").strip()
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if not token and path:
        with open(path) as f:
            token = f.readline(4096).strip()
    if token:
        request.add_unredirected_header("Authorization", f"Bearer {token}")
    return request

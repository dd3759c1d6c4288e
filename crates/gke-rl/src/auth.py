def auth_headers():
    """The Ray token's header, as Ray's own clients find the token: RAY_AUTH_TOKEN (which
    KubeRay gives the pods), then the file RAY_AUTH_TOKEN_PATH names; none without one."""
    token = os.environ.get("RAY_AUTH_TOKEN", "").strip()
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if not token and path:
        with open(path) as f:
            token = f.readline(4096).strip()
    return {"Authorization": f"Bearer {token}"} if token else {}

# The run's records, one JSON object a line in FOLDER/events.jsonl: the supervisor's and the
# keeper's one reader and one writer (gke-rl puts this text into both programs).


def decoded(line):
    """A record line, or None for one a lost node left torn."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def read_events(folder):
    try:
        with open(os.path.join(folder, "events.jsonl")) as f:
            return [event for event in map(decoded, f) if event is not None]
    except FileNotFoundError:
        return []


def append_event(folder, event):
    """Appends `event`, stamped with the time; the file is the owner's alone."""
    event = dict(event, at=round(time.time(), 3))
    fd = os.open(os.path.join(folder, "events.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(json.dumps(event) + "\n")
    return event

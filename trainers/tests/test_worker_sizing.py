"""How many env workers `shears train --cluster` keeps (cluster.workers .. cluster.max_workers): the
policy (WorkerSizing) fed the looks at the API's queue, and the two signals read from its /metrics."""

from shears_cluster.driver import WorkerSizing, trainer_behind, trainer_waits


def test_grows_by_one_after_the_trainer_waited_twice_in_a_row_and_stops_at_the_bound():
    sizing = WorkerSizing(2, 4)
    assert sizing.observe(waits=True, behind=False) == 0
    assert sizing.observe(waits=True, behind=False) == 1
    assert sizing.workers == 3
    assert "the trainer waited on data at 2 looks in a row; at most 4" in sizing.reason
    assert [sizing.observe(waits=True, behind=False) for _ in range(6)] == [0, 1, 0, 0, 0, 0]
    assert sizing.workers == 4


def test_a_look_where_the_trainer_did_not_wait_starts_the_count_again():
    sizing = WorkerSizing(1, 3)
    assert [sizing.observe(waits=w, behind=False) for w in (True, False, True, False, True)] == [0] * 5
    assert sizing.workers == 1


def test_shrinks_after_batches_waited_for_the_trainer_three_times_never_below_the_start():
    sizing = WorkerSizing(1, 3)
    sizing.observe(True, False)
    sizing.observe(True, False)
    assert sizing.workers == 2
    assert [sizing.observe(waits=False, behind=True) for _ in range(3)] == [0, 0, -1]
    assert sizing.workers == 1
    assert "two batches or more waited for the trainer at 3 looks in a row; at least 1" in sizing.reason
    assert [sizing.observe(waits=False, behind=True) for _ in range(6)] == [0] * 6
    assert sizing.workers == 1


def test_fixed_when_the_bound_is_the_start():
    sizing = WorkerSizing(2, 2)
    assert [sizing.observe(True, False) for _ in range(5)] == [0] * 5


def test_the_trainer_waits_when_it_polled_and_less_than_a_batch_is_queued():
    before = {"batch_polls": 10}
    assert trainer_waits(before, {"batch_polls": 14, "shears_api_queue_sequences": 3}, batch_size=8)
    # It did not ask for a batch since the last look: busy training, not waiting.
    assert not trainer_waits(before, {"batch_polls": 10, "shears_api_queue_sequences": 0}, batch_size=8)
    # A batch is ready for it.
    assert not trainer_waits(before, {"batch_polls": 12, "shears_api_queue_sequences": 8}, batch_size=8)
    assert not trainer_waits(
        before, {"batch_polls": 12, "shears_api_formed_batches": 1, "shears_api_queue_sequences": 0}, 8
    )


def test_data_waits_on_the_trainer_from_two_batches_queued():
    assert not trainer_behind({"shears_api_queue_sequences": 15}, batch_size=8)
    assert trainer_behind({"shears_api_queue_sequences": 16}, batch_size=8)
    assert trainer_behind({"shears_api_queue_sequences": 8, "shears_api_formed_batches": 1}, batch_size=8)


def test_batch_polls_are_read_from_the_requests_counter():
    import http.server
    import threading

    from shears_cluster.driver import _metrics

    text = (
        b"# TYPE shears_api_requests_total counter\n"
        b'shears_api_requests_total{path="/batch",status="200"} 7\n'
        b'shears_api_requests_total{path="/batch",status="500"} 1\n'
        b'shears_api_requests_total{path="/scored_data",status="200"} 3\n'
        b"shears_api_queue_sequences 4\n"
    )

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        values = _metrics(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
    assert values["batch_polls"] == 8
    assert values["shears_api_queue_sequences"] == 4

"""Off-policy lag per record: the trainer's policy version at consumption minus the version that
sampled the record (shears puts it in overrides[i].policy_version); None where none was sent."""

from shears_trainer.lag import lag_metrics, policy_lags


def group(versions):
    return {
        "tokens": [[1, 2]] * len(versions),
        "overrides": None
        if versions is None
        else [None if v is None else {"policy_version": v} for v in versions],
    }


def test_lag_is_version_at_consumption_minus_the_records_version_in_every_spelling():
    groups = [group([3, 3.0]), group([5, None]), {"tokens": [[1], [2]], "overrides": None}]
    assert policy_lags(groups, 5) == [2, 2, 0, None, None, None]
    metrics = lag_metrics(groups, 5)
    assert metrics == {
        "policy_lags": [2, 2, 0, None, None, None],
        "policy_lag_mean": 1.3333,
        "policy_lag_max": 2,
    }


def test_no_versions_gives_no_figures_rather_than_zero():
    assert lag_metrics([{"tokens": [[1]], "overrides": [{"set_advantage_to_zero": True}]}], 7) == {
        "policy_lags": [None],
        "policy_lag_mean": None,
        "policy_lag_max": None,
    }


def test_a_bool_or_text_is_not_a_version():
    groups = [{"tokens": [[1], [1]], "overrides": [{"policy_version": True}, {"policy_version": "2"}]}]
    assert policy_lags(groups, 4) == [None, None]

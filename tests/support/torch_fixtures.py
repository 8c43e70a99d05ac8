"""Module-scoped autouse fixtures of the learner tests; import them by name into a test module.

from tests.support.torch_fixtures import one_thread, tiny_random_model_available  # noqa: F401
"""

import pytest


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Torch on one thread for the module: small models spin-wait on a shared 2-core machine otherwise."""
    torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True, scope="module")
def tiny_random_model_available():
    """Skip the module with the reason when the tiny random model cannot be built (no tokenizer cache)."""
    from mimesis_gym.algorithms.testing import tiny_random_model
    from mimesis_gym.core.tiny import TinyModelUnavailable

    try:
        tiny_random_model()
    except TinyModelUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture
def learner_registry():
    """The learner registry and the algorithm table, restored to their entries before the test afterwards."""
    from mimesis_gym.algorithms.learners.registry import scoped_learners

    with scoped_learners() as learners:
        yield learners

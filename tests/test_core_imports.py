"""``core.imports.import_object``: the object a ``"package.module:name"`` path names."""

import os.path

import pytest

from mimesis_gym.core.imports import import_object


def test_a_module_and_a_dotted_name_give_the_object():
    assert import_object("os.path:join") is os.path.join
    assert import_object("mimesis_gym.core.imports:import_object") is import_object
    assert import_object("collections:OrderedDict.fromkeys").__name__ == "fromkeys"


@pytest.mark.parametrize("path", ["os.path", ":join", "os.path:", ""])
def test_a_path_without_module_or_name_names_the_setting(path):
    with pytest.raises(ValueError, match=r"csd\.coach\.callable must be 'module:function'"):
        import_object(path, setting="csd.coach.callable")


def test_a_missing_module_or_attribute_propagates():
    with pytest.raises(ImportError):
        import_object("mimesis_gym.no_such_module:f")
    with pytest.raises(AttributeError):
        import_object("os.path:no_such_function")

"""Which files are corners (tests, examples, CI) and which are the product."""
import pytest

from common.corners import is_corner


@pytest.mark.parametrize("path", [
    "tests/test_app.py", "src/test/java/org/x/OwnerTests.java", "examples/celery/tasks.py",
    "router_test.go", "test/functional/action-params.spec.ts", ".github/workflows/ci.yml",
    "docs/samples/demo.py", "benchmarks/bench_json.py", "tox.ini", "conftest.py"])
def test_tests_examples_and_ci_are_corners(path):
    assert is_corner(path)


@pytest.mark.parametrize("path", [
    "src/flask/app.py", "context.go", "src/Driver.ts", "",
    # a Maven source tree is the product whatever its packages are called
    "src/main/java/org/springframework/samples/petclinic/owner/OwnerController.java",
    "src/main/resources/examples/messages.properties"])
def test_product_files_are_not_corners(path):
    assert not is_corner(path)

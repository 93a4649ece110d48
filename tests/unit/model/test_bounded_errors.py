"""Error messages stay short however many problems a manifest has; deep nesting is refused cleanly."""

from __future__ import annotations

import pytest

from vglobal.model.errors import ManifestError, bounded_list, clip_message
from vglobal.model.manifests import MAX_DEPTH, load_documents, parse_manifests


def test_at_most_twenty_problems_then_how_many_more() -> None:
    assert bounded_list([str(i) for i in range(3)]) == "0; 1; 2"
    text = bounded_list([str(i) for i in range(25)])
    assert text.endswith("; 19; and 5 more") and "20" not in text.split("; ")


def test_a_job_with_ten_thousand_bad_tasks_gets_a_short_error() -> None:
    tasks = "\n".join(f"  - {{name: t{i}, replicas: 1, template: {{spec: {{}}}}}}" for i in range(10_000))
    text = f"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: big}}\nspec:\n  tasks:\n{tasks}\n"
    with pytest.raises(ManifestError) as err:
        parse_manifests(text, max_bytes=10_000_000)
    message = str(err.value)
    assert len(message.encode()) < 4096
    assert "more" in message and "spec.tasks[0]" in message


def test_clip_keeps_utf8_whole() -> None:
    clipped = clip_message("é" * 5000, max_bytes=101)
    assert len(clipped.encode()) <= 101 and clipped.endswith("...")
    clipped.encode("utf-8")  # no half characters


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000, "a: " + "[" * 100_000,
     '{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)],
)  # fmt: skip
def test_deep_nesting_is_a_manifest_error(text: str) -> None:
    with pytest.raises(ManifestError, match="nest"):
        load_documents(text, max_bytes=10_000_000)


def _job(replicas: str, cpu: str = "1") -> str:
    return f"""apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: big}}
spec:
  tasks:
  - {{name: t, replicas: {replicas}, template: {{spec: {{containers: [{{name: c, image: x,
      resources: {{requests: {{cpu: "{cpu}"}}}}}}]}}}}}}
"""


def test_integers_beyond_32_bits_name_the_field() -> None:
    with pytest.raises(ManifestError) as err:
        parse_manifests(_job("2147483648"))
    assert str(err.value) == "spec.tasks[0].replicas: must be at most 2147483647 (a 32-bit integer)"


def test_quantities_beyond_a_pebibyte_are_refused() -> None:
    with pytest.raises(ManifestError, match=r"spec.tasks\[0\].*too large"):
        parse_manifests(_job("1", cpu="1e30"))

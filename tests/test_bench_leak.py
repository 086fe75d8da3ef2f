"""bench.leak finds an author's sentence copied into a tracked file, and leaves shapes many authors share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SENTENCE = "The nightly export of the orchid ledger runs before the harbour sync starts"
SHAPE = "---\nname: some-note\ndescription: a note\nmetadata:\n  type: project\n---\n"


def _corpus(root: Path) -> Path:
    corpus = root / "corpus"
    for i, folder in enumerate(["alice__garden", "bob__harbour", "carol__ledger"]):
        (corpus / folder).mkdir(parents=True)
        body = SENTENCE if folder == "bob__harbour" else f"an unrelated note number {i}"
        (corpus / folder / "note.md").write_text(SHAPE + body + "\n", encoding="utf-8")
    return corpus


def _repo(root: Path, text: str) -> Path:
    repo = root / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "fixture.md").write_text(text, encoding="utf-8")
    (repo / "untracked.md").write_text(SENTENCE, encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "fixture.md"], check=True)
    return repo


def leaks(repo: Path, corpus: Path) -> list[tuple[str, str]]:
    """Run the real script (tests never import bench); its listing as (repo file, corpus folders)."""
    out = subprocess.run([sys.executable, "-m", "bench.leak", str(corpus), "--repo", str(repo)],
                         cwd=REPO, capture_output=True, text=True)
    hits = [tuple(line.split(": ", 2)[:2]) for line in out.stdout.splitlines()]
    assert out.returncode == (1 if hits else 0), out.stderr
    return [(path, shares.removeprefix("shares with ")) for path, shares in hits]


def test_a_copied_sentence_is_found_with_its_folder_even_rewrapped(tmp_path: Path) -> None:
    rewrapped = "Intro.\n" + SENTENCE.replace(" the harbour", "\n  the harbour") + "\n"
    hits = leaks(_repo(tmp_path, rewrapped), _corpus(tmp_path))
    assert hits and set(hits) == {("fixture.md", "bob__harbour")}


def test_a_shape_every_author_shares_and_untracked_files_are_not_reported(tmp_path: Path) -> None:
    own_words = SHAPE + "Invented text that no corpus folder has ever contained at all.\n"
    assert leaks(_repo(tmp_path, own_words), _corpus(tmp_path)) == []

//! Per-node temporary workspaces on real directories: the node's edits come back as an exact
//! unified patch, merge into the project only where it still equals the base, never write
//! through a symlinked directory, and leave the project alone until merged.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

use std::fs;

use weft_sandbox::scratch::{ChangeKind, DEFAULT_EXCLUDES, Scratch, ScratchError};

fn project() -> tempfile::TempDir {
    let p = tempfile::tempdir().unwrap();
    fs::create_dir_all(p.path().join("src")).unwrap();
    fs::create_dir_all(p.path().join(".git")).unwrap();
    fs::write(p.path().join(".git/HEAD"), "ref: main\n").unwrap();
    fs::write(p.path().join("src/lib.rs"), "a\nb\nc\n").unwrap();
    fs::write(p.path().join("old.txt"), "bye\n").unwrap();
    fs::write(p.path().join("logo.bin"), [0u8, 1, 2]).unwrap();
    p
}

#[test]
fn edits_come_back_as_a_unified_patch_and_the_project_is_untouched() {
    let p = project();
    let s = Scratch::copy(p.path(), DEFAULT_EXCLUDES).unwrap();
    let w = s.path();
    assert!(!w.join(".git").exists(), "excluded names are not copied");
    assert!(s.diff().unwrap().is_empty());
    fs::write(w.join("src/lib.rs"), "a\nB\nc\n").unwrap();
    fs::write(w.join("new.md"), "hello\n").unwrap();
    fs::remove_file(w.join("old.txt")).unwrap();
    fs::write(w.join("logo.bin"), [0u8, 9]).unwrap();
    let patch = s.diff().unwrap();
    let kinds: Vec<(&str, ChangeKind, bool)> = patch
        .changes
        .iter()
        .map(|c| (c.path.as_str(), c.kind, c.binary))
        .collect();
    assert_eq!(
        kinds,
        [
            ("logo.bin", ChangeKind::Modified, true),
            ("new.md", ChangeKind::Added, false),
            ("old.txt", ChangeKind::Deleted, false),
            ("src/lib.rs", ChangeKind::Modified, false),
        ]
    );
    assert_eq!(
        patch.text,
        "Binary files a/logo.bin and b/logo.bin differ\n\
         --- /dev/null\n+++ b/new.md\n@@ -0,0 +1 @@\n+hello\n\
         --- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n\
         --- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    );
    // Nothing reached the project before the merge.
    assert_eq!(
        fs::read_to_string(p.path().join("src/lib.rs")).unwrap(),
        "a\nb\nc\n"
    );
    let merged = s.merge().unwrap();
    assert_eq!(merged, patch);
    assert_eq!(
        fs::read_to_string(p.path().join("src/lib.rs")).unwrap(),
        "a\nB\nc\n"
    );
    assert_eq!(
        fs::read_to_string(p.path().join("new.md")).unwrap(),
        "hello\n"
    );
    assert!(!p.path().join("old.txt").exists());
    assert_eq!(fs::read(p.path().join("logo.bin")).unwrap(), [0u8, 9]);
    assert!(p.path().join(".git/HEAD").exists());
}

#[test]
fn a_path_changed_in_the_project_meanwhile_is_a_conflict_and_nothing_is_written() {
    let p = project();
    let s = Scratch::copy(p.path(), DEFAULT_EXCLUDES).unwrap();
    fs::write(s.path().join("src/lib.rs"), "mine\n").unwrap();
    fs::write(s.path().join("new.md"), "x\n").unwrap();
    fs::write(p.path().join("src/lib.rs"), "theirs\n").unwrap();
    let e = s.merge().unwrap_err();
    assert!(
        matches!(e, ScratchError::Conflict(ref paths) if paths == &["src/lib.rs".to_owned()]),
        "{e}"
    );
    assert_eq!(
        fs::read_to_string(p.path().join("src/lib.rs")).unwrap(),
        "theirs\n"
    );
    assert!(
        !p.path().join("new.md").exists(),
        "a partial merge happened"
    );
}

#[test]
fn a_symlinked_directory_in_the_project_is_never_written_through() {
    let p = project();
    let outside = tempfile::tempdir().unwrap();
    let s = Scratch::copy(p.path(), DEFAULT_EXCLUDES).unwrap();
    fs::create_dir_all(s.path().join("gen")).unwrap();
    fs::write(s.path().join("gen/out.txt"), "x\n").unwrap();
    // Meanwhile the project's `gen` became a link to a directory outside it.
    std::os::unix::fs::symlink(outside.path(), p.path().join("gen")).unwrap();
    let e = s.merge().unwrap_err();
    assert!(
        matches!(e, ScratchError::Symlink(ref path) if path == "gen/out.txt"),
        "{e}"
    );
    assert!(!outside.path().join("out.txt").exists());
}

#[test]
fn the_scratch_directory_is_removed_on_drop() {
    let p = project();
    let s = Scratch::copy(p.path(), DEFAULT_EXCLUDES).unwrap();
    let w = s.path();
    assert!(w.exists());
    drop(s);
    assert!(!w.exists());
}

#[test]
fn a_kept_copy_left_by_a_dead_process_is_opened_again_with_its_edits() {
    let p = project();
    let place = p.path().join(".weft/scratch/run/n/1");
    let first = Scratch::at(p.path(), &place, DEFAULT_EXCLUDES).unwrap();
    fs::write(first.path().join("new.txt"), "made before the crash\n").unwrap();
    // The process dies: nothing is dropped.
    std::mem::forget(first);
    let again = Scratch::at(p.path(), &place, DEFAULT_EXCLUDES).unwrap();
    let patch = again.diff().unwrap();
    assert_eq!(patch.changes.len(), 1);
    assert_eq!(patch.changes[0].path, "new.txt");
    // The copy never contains itself (`.weft` is left out).
    assert!(!again.path().join(".weft").exists());
    drop(again);
    assert!(!place.exists());
    // An incomplete copy (no completion mark) is made again from the project.
    fs::create_dir_all(place.join("work")).unwrap();
    fs::write(place.join("work/stray.txt"), "half a copy").unwrap();
    let fresh = Scratch::at(p.path(), &place, DEFAULT_EXCLUDES).unwrap();
    assert!(fresh.diff().unwrap().is_empty());
}

#[test]
fn the_same_edit_already_in_the_project_is_not_a_conflict() {
    let p = project();
    let s = Scratch::copy(p.path(), DEFAULT_EXCLUDES).unwrap();
    fs::write(s.path().join("old.txt"), "same\n").unwrap();
    fs::write(p.path().join("old.txt"), "same\n").unwrap();
    s.merge().unwrap();
    assert_eq!(
        fs::read_to_string(p.path().join("old.txt")).unwrap(),
        "same\n"
    );
    // Caches are never copied nor merged.
    fs::create_dir_all(s.path().join("src/__pycache__")).unwrap();
    fs::write(s.path().join("src/__pycache__/lib.pyc"), [0u8, 1]).unwrap();
    assert!(
        s.diff()
            .unwrap()
            .changes
            .iter()
            .all(|c| !c.path.contains("__pycache__"))
    );
}

#[test]
fn an_anchored_exclusion_leaves_out_that_path_only() {
    let p = tempfile::tempdir().unwrap();
    std::fs::write(p.path().join("full.db-shm"), "live").unwrap();
    std::fs::create_dir(p.path().join("sub")).unwrap();
    std::fs::write(p.path().join("sub/full.db-shm"), "project data").unwrap();
    let s = Scratch::copy(p.path(), &[".weft", "/full.db-shm"]).unwrap();
    assert!(!s.path().join("full.db-shm").exists());
    assert_eq!(
        std::fs::read_to_string(s.path().join("sub/full.db-shm")).unwrap(),
        "project data"
    );
    // weft changing its own file while the node works is not the node's edit.
    std::fs::write(p.path().join("full.db-shm"), "changed").unwrap();
    assert!(s.diff().unwrap().changes.is_empty());
    assert!(s.merge().unwrap().changes.is_empty());
}

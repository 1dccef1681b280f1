"""What a command may write, and how: one rule for every file oasis-gym writes (README,
"Guarantees"; the journal's own rules are `platform.journal_file`'s).

- A command writes only into paths it created or that hold its own earlier output: a folder
  (`report`, `sweep`, `train --out`) is recognised by the command's marker in it,
  ``.oasis-gym-<command>.json`` (each file it wrote there with the SHA-256 of its bytes, and the
  sub-folders it owns whole, SB3's ``tb/`` and ``checkpoints/``); a single file (`run --figures`,
  an imported journal) by a signature in the file (`OutputFile`); a TensorBoard folder by its
  marker (naming the journal whose run writes there) and event files (`check_logdir`).
- Anything else there (a user's file, a file of ours changed since, a link, a folder where a
  file goes) is refused with one line naming it (`OutputError`: exit code 2) before anything is
  computed and never touched, `--overwrite` or not; files the command would not write are
  never looked at. Its own earlier output is replaced only with `--overwrite`.
- Files are written under a temporary name in the same folder and renamed into place (a new name
  by a hard link, which never replaces, as `journal_file.create_new` does): a killed command
  leaves nothing or its previous output, plus at most a hidden ``.oasis-gym-tmp-<pid>-...``
  entry the next command removes. The marker gets a file's new hash before its rename and loses
  the old one after, so a kill at any moment leaves files the next run knows as its own.
- One command writes an output folder at a time: from its check (which creates a missing
  folder) until it ends, a command holds an OS lock on the folder itself (`files.hold_folder`;
  the marker is replaced on every update, so it is the folder, every name of it, that is
  locked); a second command on that folder, in another process, is refused with one line
  before it computes anything. A folder the check created is removed again if the command
  ends without writing into it.
"""

from .file import OutputFile
from .files import OutputError, is_signed, signed
from .folder import OutputDir, staged_path

__all__ = ["OutputError", "OutputDir", "OutputFile", "staged_path", "signed", "is_signed"]

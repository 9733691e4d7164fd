"""Job identity: which rank of which job this process is, and where its profile goes.

Every process of a training job (torchrun, ``torch.multiprocessing.spawn``, SLURM, MPI, JAX
multi-process, TensorFlow multi-worker) saves into ONE run directory, one host file per
rank, named so a user recognizes it (docs/jobs.md):

- **the rank** from ``torch.distributed`` when it is initialized (``mp.spawn`` sets no
  environment: its rank is known only after ``init_process_group``, so it is read when the
  profile is saved), else the launchers' variables: ``RANK``/``WORLD_SIZE`` (torchrun),
  ``SLURM_PROCID``/``SLURM_NTASKS``, ``OMPI_COMM_WORLD_RANK``/``_SIZE``, ``PMI_RANK``/
  ``PMI_SIZE``, JAX's distributed client when initialized, TensorFlow's ``TF_CONFIG``;
- **the host file** ``<host>.rank<k>.xplane.pb`` (TF_CONFIG: ``<host>.<type><index>``), a
  plain ``<host>.xplane.pb`` outside a job of several processes, the ``hostname=`` given;
- **the run** all ranks agree on without talking to each other: ``run_name=`` (or
  ``STEPSCOPE_RUN_NAME``) when given; else a job key from the scheduler (``SLURM_JOB_ID``,
  ``TORCHELASTIC_RUN_ID``, PMIx/Open MPI job ids, JAX's coordinator, TF_CONFIG's cluster) or,
  on one machine, the launcher process that started the ranks (their parent: torchrun's agent,
  ``mp.spawn``'s caller). The first rank to save names the run after its start time (as
  TensorFlow does) and leaves that name in ``<logdir>/.stepscope/jobs/<key>.<n>``, created
  atomically; the others read it there. A rank whose file the run already holds (its own
  earlier capture, or an earlier launch of a job with the same key) takes the next entry.

No profile is ever overwritten: the host file is created exclusively (`write_new`); when the
name is taken after all (another process saving the same name at the same instant), the
profile goes to the next free run name (``_2``, ``_3``...) with a warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from stepscope.errors import StepscopeError
from stepscope.logdir import host_file_name, host_taken, profile_root
from stepscope.records import record

RUN_NAME_ENV = "STEPSCOPE_RUN_NAME"
JOBS_DIR = (".stepscope", "jobs")  # under the log directory, beside plugins/


@record
class JobIdentity:
    """Who this process is in its job (all None / "" outside a job of several processes)."""

    rank: int | None = None
    world_size: int | None = None
    local_rank: int | None = None
    job_key: str = ""  # what every rank of the job shares; "" when nothing is known
    source: str = ""  # where rank and key came from, for people (e.g. "torchrun")
    task: str = ""  # TF_CONFIG's "worker1", "chief0"...: names the host file instead of rank

    @property
    def in_job(self) -> bool:
        return self.rank is not None and (self.world_size or 0) > 1

    def host_name(self, machine: str) -> str:
        """The host name of this process's profile: ``<machine>.rank<k>`` in a job."""
        if not self.in_job:
            return machine
        return f"{machine}.{self.task or f'rank{self.rank}'}"


def _int(env: dict[str, str] | os._Environ[str], *names: str) -> int | None:
    for name in names:
        text = env.get(name, "").strip()
        if text.lstrip("-").isdigit():
            return int(text)
    return None


def _torch_distributed() -> tuple[int, int] | None:
    """(rank, world size) from torch.distributed when the program initialized it."""
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    try:
        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:  # a half-torn-down process group: the environment may still say
        return None
    return None


def _jax_distributed() -> tuple[int, int, str] | None:
    """(process index, process count, coordinator) when jax.distributed was initialized.
    Read from JAX's distributed state, never by starting a backend."""
    if "jax" not in sys.modules:
        return None
    try:
        from jax._src import distributed

        state = distributed.global_state
        if state.client is None:
            return None
        return int(state.process_id), int(state.num_processes), str(state.coordinator_address)
    except Exception:  # another JAX version's layout: not a job we can name
        return None


def _tf_config(env: dict[str, str] | os._Environ[str]) -> tuple[int, int, str, str] | None:
    """(rank, world size, task name, cluster digest) from TensorFlow's TF_CONFIG."""
    text = env.get("TF_CONFIG", "")
    if not text:
        return None
    try:
        config = json.loads(text)
        cluster = config["cluster"]
        kind, index = str(config["task"]["type"]), int(config["task"]["index"])
        order = sorted(cluster, key=lambda k: (k not in ("chief", "master"), k))
        rank = 0
        for name in order:
            if name == kind:
                rank += index
                break
            rank += len(cluster[name])
        world = sum(len(cluster[name]) for name in cluster if name != "evaluator")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    digest = json.dumps(cluster, sort_keys=True)
    return rank, world, f"{kind}{index}", digest


def _launcher(pid: int) -> str:
    """The parent process as a key: its pid and (Linux) start time, so a reused pid differs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return f"launcher {pid} started {fields[19]}"
    except (OSError, IndexError):
        return f"launcher {pid}"


def detect(env: dict[str, str] | os._Environ[str] | None = None) -> JobIdentity:
    """This process's identity in its job (see the module docstring for the sources)."""
    env = os.environ if env is None else env
    rank = world = None
    sources = []
    key = ""
    task = ""
    torch_rw = _torch_distributed()
    if torch_rw is not None:
        rank, world = torch_rw
        sources.append("torch.distributed")
    tf = _tf_config(env)
    jax_rw = _jax_distributed()
    launchers = (
        ("torchrun", ("RANK",), ("WORLD_SIZE",)),
        ("SLURM", ("SLURM_PROCID",), ("SLURM_NTASKS", "SLURM_NPROCS")),
        ("Open MPI", ("OMPI_COMM_WORLD_RANK",), ("OMPI_COMM_WORLD_SIZE",)),
        ("PMI", ("PMI_RANK", "PMIX_RANK"), ("PMI_SIZE",)),
    )
    for name, rank_vars, size_vars in launchers:
        env_rank, env_world = _int(env, *rank_vars), _int(env, *size_vars)
        if env_rank is not None and rank is None:
            rank, world = env_rank, env_world
            sources.append(name)
    if rank is None and jax_rw is not None:
        rank, world = jax_rw[0], jax_rw[1]
        sources.append("jax.distributed")
    if rank is None and tf is not None:
        rank, world, task = tf[0], tf[1], tf[2]
        sources.append("TF_CONFIG")
    elif tf is not None and rank == tf[0]:
        task = tf[2]
    local = _int(env, "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK")
    # The job key: the scheduler's job id first (shared across machines), then what the
    # ranks of one launch share on one machine.
    run_id = env.get("TORCHELASTIC_RUN_ID", "").strip()
    if env.get("SLURM_JOB_ID"):
        key = f"slurm {env['SLURM_JOB_ID']}.{env.get('SLURM_STEP_ID', '')}"
    elif run_id and run_id.lower() != "none":
        key = f"torchelastic {run_id}"
    elif env.get("PMIX_NAMESPACE") or env.get("OMPI_MCA_ess_base_jobid"):
        key = f"pmix {env.get('PMIX_NAMESPACE') or env.get('OMPI_MCA_ess_base_jobid')}"
    elif jax_rw is not None:
        key = f"jax {jax_rw[2]} x{jax_rw[1]}"
    elif tf is not None:
        key = f"tf_config {tf[3]}"
    if rank is not None and (world or 0) > 1:
        # One machine's ranks also share their launcher (torchrun's agent, mp.spawn's caller)
        # and the rendezvous address: the key when no scheduler gave one.
        master = f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}"
        if not key:
            key = f"{_launcher(os.getppid())} master {master}"
            sources.append("launcher process")
    else:
        key = ""  # one process: nothing to agree on
    return JobIdentity(rank, world, local, key, " + ".join(sources), task)


def check_run_name(name: str) -> str:
    if not name or "/" in name or "\\" in name or name in (".", "..") or "\x00" in name:
        raise StepscopeError(
            f"run_name {name!r} must be a plain directory name (no '/', not '.' or '..')"
        )
    return name


@record
class Placement:
    """Where a capture is saved."""

    run_dir: Path
    hostname: str
    identity: JobIdentity
    explicit_name: bool  # run_name= (or STEPSCOPE_RUN_NAME) chose the run


def place(
    logdir: str,
    start_name: str,
    hostname: str | None,
    run_name: str | None = None,
    identity: JobIdentity | None = None,
) -> Placement:
    """The run directory and host name of a capture that started at ``start_name`` (its
    TensorFlow-style timestamp name). Creates the run directory (and the job's entry)."""
    ident = detect() if identity is None else identity
    host = hostname or ident.host_name(_machine())
    file_name = host_file_name(host)
    explicit = run_name or os.environ.get(RUN_NAME_ENV, "").strip() or None
    root = profile_root(logdir)
    if ident.job_key and explicit is None:
        run_dir = _join_job(Path(logdir), ident.job_key, start_name, file_name)
        return Placement(run_dir, host, ident, False)
    base = start_name if explicit is None else check_run_name(explicit)
    run_dir = _free_run(root, base, file_name)
    if run_dir.name != base:
        from stepscope import log

        log.warn(
            f"stepscope: run {base!r} already holds {file_name}; this profile is saved in run "
            f"{run_dir.name!r} instead (no profile is ever replaced). Ranks of one job: see "
            "docs/jobs.md"
        )
    return Placement(run_dir, host, ident, explicit is not None)


def _machine() -> str:
    from stepscope.logdir import default_hostname

    return default_hostname()


def _free_run(root: Path, base: str, file_name: str) -> Path:
    """``root/base``, or the first of ``base_2``, ``base_3``... that lacks ``file_name``."""
    candidate, suffix = root / base, 2
    while host_taken(candidate, file_name):
        candidate, suffix = root / f"{base}_{suffix}", suffix + 1
    return candidate


def _join_job(logdir: Path, key: str, start_name: str, file_name: str) -> Path:
    """The run of this job that does not hold ``file_name`` yet (see the module docstring)."""
    root = profile_root(logdir)
    jobs = logdir.joinpath(*JOBS_DIR)
    stem = hashlib.sha256(key.encode()).hexdigest()[:16]
    for n in range(1, 10_000):
        entry = jobs / f"{stem}.{n}"
        name = _read_entry(entry)
        if name is None:
            name = _create_entry(root, entry, start_name)
        if not host_taken(root / name, file_name):
            return root / name
    raise StepscopeError(f"{jobs}: 10000 runs of one job; remove old entries there")


def _read_entry(entry: Path) -> str | None:
    try:
        text = entry.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except UnicodeDecodeError:
        text = ""
    return _safe_name(text) if text else None


def _safe_name(text: str) -> str | None:
    try:
        return check_run_name(text)
    except StepscopeError:
        return None


def _create_entry(root: Path, entry: Path, start_name: str) -> str:
    """Name the job's next run after this capture's start (the first such name not taken),
    and publish it as ``entry``; when another rank published first, its name."""
    from stepscope.tmpfiles import write_new

    name, suffix = start_name, 2
    while (root / name).exists():
        name, suffix = f"{start_name}_{suffix}", suffix + 1
    try:
        write_new(entry, (name + "\n").encode())
        (root / name).mkdir(parents=True, exist_ok=True)  # taken: the next job names another
        return name
    except FileExistsError:
        pass
    for _ in range(100):  # the winner's name (being written, on a file system without links)
        found = _read_entry(entry)
        if found is not None:
            return found
        time.sleep(0.01)
    return name

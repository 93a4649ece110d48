"""Typed settings for the hub and the agent: each declared once here (name, type, description,
default); the CLI derives its flags from these fields. A flag beats a VGLOBAL_* environment
variable, which beats the default."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import AliasChoices, BeforeValidator, Field, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from vglobal.dial import is_loopback
from vglobal.model.admission_policy import HUB_POLICY, AdmissionPolicy
from vglobal.model.duration import parse_duration
from vglobal.model.placement_config import load_placement_config

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:/\s*(s|m|h))?\s*$")
_PER = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_rate(text: str) -> float:
    """``100/s``, ``6000/m`` or ``100`` as calls per second; 0 turns the limit off."""
    m = _RATE.match(text)
    if m is None:
        raise ValueError(f'rate-limit: expected N/s, N/m or N/h, got "{text}"')
    return float(m.group(1)) / _PER[m.group(2) or "s"]


def _seconds(value: Any) -> Any:
    """``"30s"``, ``"1h30m"`` or plain seconds (``"7"``, as an environment variable gives them)."""
    if not isinstance(value, str):
        return value
    try:
        return float(value)
    except ValueError:
        return parse_duration(value)


def _per_second(value: Any) -> Any:
    return parse_rate(value) if isinstance(value, str) else value


def _key_values(value: Any) -> Any:
    """``a=b,c=d`` (the environment) or ``("a=b", "c=d")`` (repeated flags) as a mapping."""
    if not isinstance(value, str | list | tuple):
        return value
    items = value.split(",") if isinstance(value, str) else list(value)
    out = {}
    for item in (i.strip() for i in items):
        key, sep, val = item.partition("=")
        if not sep or not key:
            raise ValueError(f"expected KEY=VALUE, not {item!r}")
        out[key] = val
    return out


# The CLI derives each command's flags from these fields: a duration is given as "30s", "5m" or
# plain seconds; "file" marks a path that must name an existing file; "flag" a flag name other than
# the field's; "secret" a value --print-settings redacts.
AS_SECONDS = BeforeValidator(_seconds)
Seconds = Annotated[float, AS_SECONDS]
PerSecond = Annotated[float, BeforeValidator(_per_second)]
FILE: dict[str, Any] = {"file": True}
_POLICY = HUB_POLICY


class HubSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VGLOBAL_", extra="ignore", populate_by_name=True)

    listen: str = Field("127.0.0.1:50051", description="HOST:PORT of the gRPC API.")
    database_url: str | None = Field(
        None, description="Use this Postgres instead of an embedded one.", json_schema_extra={"secret": True}
    )
    data_dir: Path | None = Field(None, description="Embedded Postgres data directory.")
    kinds_file: Path | None = Field(
        None,
        description="KindDefinitions (vglobal.io/v1) of custom resources to take as job kinds.",
        json_schema_extra=FILE,
    )
    metrics_listen: str | None = Field(None, description="Serve Prometheus metrics on HOST:PORT.")
    dispatch_interval: Seconds = Field(1.0, gt=0, description="How often the dispatcher admits jobs.")
    forecast_interval: Seconds = Field(
        30.0, ge=0, description="How often the leader predicts when waiting jobs start (0 = never)."
    )
    forecast_budget: Seconds = Field(
        1.0, gt=0, description="CPU seconds one prediction may take; it replays fewer cycles when over."
    )
    forecast_horizon: Seconds = Field(
        7 * 86400.0, gt=0, description="How far ahead a prediction looks; later starts are unknown."
    )
    cluster_timeout: Seconds = Field(
        30.0, gt=0, description="A cluster without a heartbeat this long is NotReady."
    )
    failover_after: Seconds = Field(
        300.0, ge=0, description="A cluster NotReady this long has its jobs re-queued elsewhere."
    )
    finished_job_ttl: Seconds = Field(
        7 * 86400.0,
        ge=0,
        description="Remove jobs this long after they finished, with their events (0 = keep them).",
    )
    heartbeat_interval: Seconds = Field(5.0, gt=0, description="How often agents report to the hub.")
    exclude_for: Seconds = Field(
        300.0, ge=0, description="How long a rejected or failed-over cluster is skipped."
    )
    # The admission policy's settings (vglobal.model.admission_policy) with its defaults;
    # admission_policy() reads them back as the one value admission is given.
    placement: Literal["binpack", "spread"] = Field(
        _POLICY.placement, description="Which fitting cluster a job goes to."  # type: ignore[arg-type]
    )
    keep_accelerators: bool = Field(
        _POLICY.keep_accelerators,
        description="Jobs asking for no GPU (or other accelerator) go to clusters without one while those "
        "hold them.",
    )
    starvation_after: Seconds = Field(
        _POLICY.starvation_after,
        ge=0,
        description="A gang waiting this long holds the capacity it needs against its own queue's "
        "later jobs.",
    )
    reclaim_after: Seconds = Field(
        _POLICY.reclaim_after,
        ge=0,
        description="A job must have waited this long before it may take capacity back from other queues.",
    )
    reclaim_min_runtime: Seconds = Field(
        _POLICY.reclaim_min_runtime,
        ge=0,
        description="A job must have run this long before another queue may take it back (guards long jobs).",
    )
    fair_share_half_life: Seconds = Field(
        _POLICY.fair_share_half_life,
        ge=0,
        description="Fair share over time: queues are ordered by their usage decayed with this "
        "half-life against their deserved share (0 = by what they hold now).",
    )
    reclaim_limit: float = Field(
        _POLICY.reclaim_limit,
        ge=0,
        description="Reclaim takes from a queue at most this fraction of what it runs per "
        "--reclaim-interval (0 = no limit; 1 or more limits nothing).",
    )
    reclaim_interval: Seconds = Field(600.0, gt=0, description="The interval of --reclaim-limit.")
    placement_config: Path | None = Field(
        None,
        description="The placement file: cluster taints, where datasets live, costs per cluster and "
        "resource (README: Placement).",
        json_schema_extra=FILE,
    )
    reclaim_rule: Literal["share", "worth"] = Field(
        _POLICY.reclaim_rule,  # type: ignore[arg-type]
        description="share: reclaim takes any victim the queues' deserved shares allow; worth: also "
        "only while the victims' lost work (since their last checkpoint) is worth the reclaimer's "
        "gain in share, protected and near-share queues left alone.",
    )
    protected_fraction: float = Field(
        _POLICY.protected_fraction,
        ge=0,
        description="With --reclaim-rule worth: a queue below this fraction of its fair share is never "
        "a victim (Armada's protectedFractionOfFairShare).",
    )
    reclaim_margin: float = Field(
        _POLICY.reclaim_margin,
        ge=0,
        description="With --reclaim-rule worth: a queue within this fraction of its fair share neither "
        "reclaims nor loses jobs to reclaim.",
    )
    reclaim_horizon: Seconds = Field(
        _POLICY.reclaim_horizon,
        ge=0,
        description="With --reclaim-rule worth: a reclaim's victims may lose at most the reclaimed room "
        "held this long (resource-seconds, dominant share).",
    )
    claim_timeout: Seconds = Field(
        _POLICY.claim_timeout,
        gt=0,
        description="Room freed by victims stays claimed for the job they were taken for until its "
        "pods bind or this long: nobody else, the victims included, is admitted into it.",
    )
    queue_lookback: int = Field(
        _POLICY.queue_lookback,
        ge=0,
        description="Jobs per leaf queue examined each cycle past those it admits, in queue order; "
        "the rest wait a turn (0 = all).",
    )
    max_admissions: int = Field(
        _POLICY.max_admissions,
        ge=0,
        description="Admissions per dispatch cycle at most; a bigger burst goes on in the next cycle "
        "(0 = all).",
        # its name until it joined the policy, still accepted as a flag and environment variable
        validation_alias=AliasChoices("vglobal_max_admissions", "vglobal_max_admissions_per_cycle"),
        json_schema_extra={"aliases": ["max_admissions_per_cycle"]},
    )
    max_manifest_bytes: int = Field(1_048_576, gt=0, description="Largest manifest accepted (bytes).")
    max_batch: int = Field(1000, gt=0, description="Jobs one SubmitJobs call may hold.")
    max_tasks_per_job: int = Field(1000, gt=0, description="Tasks one job may have.")
    max_pods_per_job: int = Field(20_000, gt=0, description="Pods one job may have.")
    watch_keep_for: Seconds = Field(
        900.0,
        gt=0,
        description="Job changes stay this long in the watch log; a watch resuming from older gets "
        "OUT_OF_RANGE.",
    )
    watch_keep_changes: int = Field(500_000, gt=0, description="Job changes the watch log keeps at most.")
    watch_buffer: int = Field(
        10_000,
        gt=0,
        description="Changes a watcher may fall behind by before it is cut off (RESOURCE_EXHAUSTED).",
    )
    max_watches: int = Field(
        512,
        gt=0,
        description="Watch streams one hub serves at a time (each about 56 KiB and a thread: "
        "bench/RESULTS.md).",
    )
    max_watches_per_caller: int = Field(
        0,
        ge=0,
        description="Watch streams one caller may hold (0: a quarter of --max-watches); an open hub "
        "counts its callers per host.",
    )
    hub_id: str = Field(
        "", description="This replica's name in logs and leader records (default: generated)."
    )
    queue_history_keep: Seconds = Field(
        7 * 86400.0,
        gt=0,
        description="Keep each queue's sampled share history this long (GetQueueHistory, the "
        "dashboard's plots).",
    )
    queue_history_interval: Seconds = Field(
        60.0, gt=0, description="How often the leader samples each queue's share history."
    )
    # Security: TLS, client certificates for agents, the auth config, limits.
    tls_cert: Path | None = Field(
        None, description="The hub's certificate (PEM); serve TLS.", json_schema_extra=FILE
    )
    tls_key: Path | None = Field(None, description="The key of --tls-cert.", json_schema_extra=FILE)
    client_ca: Path | None = Field(
        None,
        description="CA of agents' client certificates (URI SAN spiffe://vglobal/cluster/NAME).",
        json_schema_extra=FILE,
    )
    agent_listen: str | None = Field(
        None, description="HOST:PORT where agents connect with client certificates (mutual TLS)."
    )
    auth_config: Path | None = Field(
        None, description="Users, tokens and roles (kind AuthConfig); SIGHUP reloads.", json_schema_extra=FILE
    )
    insecure: bool = Field(False, description="Allow plaintext or open access beyond loopback.")
    secret_keys_file: Path | None = Field(
        None,
        description="Keys sealing Secrets at rest, one a line: the first seals, every one opens "
        "(rotation: add a new key first, restart, drop the old one).",
        json_schema_extra=FILE,
    )
    secret_keys: str | None = Field(
        None,
        description="The same keys comma-separated (best given as VGLOBAL_SECRET_KEYS).",
        json_schema_extra={"secret": True},
    )
    rate_limit: PerSecond = Field(
        100.0, ge=0, description="Calls per principal (N/s, N/m, N/h or a number a second; 0 = off)."
    )
    rate_burst: int = Field(500, ge=1, description="Calls a principal may make in a burst above the rate.")
    calls_in_flight: int = Field(
        16,
        ge=0,
        description="Unary calls one principal may have in progress at once, more are refused "
        "RESOURCE_EXHAUSTED with a retry delay (0 = no limit; off with --rate-limit 0).",
    )
    max_agent_streams: int = Field(1000, ge=1, description="Open agent streams.")
    register_timeout: Seconds = Field(5.0, gt=0, description="An agent stream must Register within this.")
    grpc_workers: int = Field(32, ge=1, description="Threads serving the unary API.")
    api_processes: int = Field(
        1,
        ge=1,
        description="Processes serving the public API on --listen (SO_REUSEPORT), each with its own "
        "GIL; the first also runs the leader loops and the agent port.",
    )

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    def admission_policy(self) -> AdmissionPolicy:
        """The admission policy these settings give (one field each)."""
        names = [f for f in AdmissionPolicy.__dataclass_fields__ if f != "placement_config"]
        fields = {f: getattr(self, f) for f in names}
        return AdmissionPolicy(**fields, placement_config=load_placement_config(self.placement_config))

    @model_validator(mode="after")
    def _placement_file(self) -> Self:
        try:
            load_placement_config(self.placement_config)
        except (OSError, ValueError) as e:
            raise ValueError(f"--placement-config {self.placement_config}: {e}") from e
        return self

    @model_validator(mode="after")
    def _secure_by_default(self) -> Self:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("--tls-cert and --tls-key go together")
        if self.client_ca is not None and not self.tls:
            raise ValueError("--client-ca needs --tls-cert and --tls-key")
        if (self.client_ca is None) != (self.agent_listen is None):
            raise ValueError(
                "--client-ca and --agent-listen go together: agents' client certificates are checked "
                "on a port of their own (gRPC's Python server cannot ask for an optional certificate "
                "on the port users reach without one)"
            )
        if self.insecure:
            return self
        if not self.tls and not is_loopback(self.listen):
            raise ValueError(
                f"--listen {self.listen}: without TLS the hub listens only on loopback; give --tls-cert "
                "and --tls-key (or --insecure to serve plaintext anyway)"
            )
        if self.auth_config is None and not is_loopback(self.listen):
            raise ValueError(
                f"--listen {self.listen}: beyond loopback the hub needs --auth-config (users' tokens and "
                "roles), or --insecure to let anyone who reaches it do anything"
            )
        return self


class AgentSettings(BaseSettings):
    """The agent of one member cluster, simulated (``sim``) or real (``kubeconfig``/``in_cluster``)."""

    model_config = SettingsConfigDict(env_prefix="VGLOBAL_AGENT_", extra="ignore")

    sim: Path | None = Field(
        None, description="Simulated cluster file (kind SimCluster).", json_schema_extra=FILE
    )
    kubeconfig: Path | None = Field(
        None, description="A real cluster, reached through this kubeconfig.", json_schema_extra=FILE
    )
    context: str | None = Field(None, description="The kubeconfig context (default: its current context).")
    in_cluster: bool = Field(
        False,
        description="The cluster the agent runs in, through its service account "
        "(the default where KUBERNETES_SERVICE_HOST is set).",
    )
    name: str | None = Field(
        None, description="Cluster name at the hub (default: the sim file's name or the context's)."
    )
    labels: Annotated[dict[str, str], NoDecode, BeforeValidator(_key_values)] = Field(
        default_factory=dict,
        description="KEY=VALUE label of the cluster at the hub (kube; repeatable; env a=b,c=d).",
        json_schema_extra={"flag": "label"},
    )
    scheduler_conf: Path | None = Field(
        None, description="The local scheduler's configuration (Volcano's format).", json_schema_extra=FILE
    )
    kinds_file: Path | None = Field(
        None,
        description="KindDefinitions (vglobal.io/v1) of custom resources to run, as the hub's --kinds-file.",
        json_schema_extra=FILE,
    )
    bind_timeout: Seconds = Field(60.0, gt=0, description="How long a job may take to bind its pods.")
    heartbeat_interval: Seconds = Field(5.0, gt=0, description="How often the agent reports to the hub.")
    scheduler_name: str = Field("vglobal", description="schedulerName of the pods the agent creates.")
    kube_qps: float = Field(50.0, ge=0, description="API requests per second (0 = no limit).")
    kube_burst: int = Field(100, ge=1, description="API requests in a burst.")
    namespaces: str = Field("", description="Run jobs only in these namespaces (a,b; default all).")
    create_namespaces: bool = Field(False, description="Create a job's namespace when the cluster lacks it.")
    lease_duration: Seconds = Field(15.0, ge=0, description="Leader election Lease (0 = no election).")
    lease_namespace: str | None = Field(
        None, description="Namespace of the Lease (default: the agent's own)."
    )
    hypernode_discovery: Path | None = Field(
        None, description="HyperNodes discovered from node labels, RoCE LLDP labels or UFM (Volcano's "
        "networkTopologyDiscovery config).", json_schema_extra=FILE
    )
    node_pools: Path | None = Field(
        None, description="Node pools the cluster can grow (kube): name, max, provisionDelay, a new node's "
        "allocatable and labels; nodes join a pool by label karpenter.sh/nodepool or vglobal.io/node-pool.",
        json_schema_extra=FILE,
    )
    metrics_listen: str | None = Field(
        None, description="Serve Prometheus metrics on [HOST:]PORT (127.0.0.1 unless a host is given)."
    )
    metrics_public: bool = Field(
        False, description="Allow --metrics-listen beyond loopback (plain HTTP, no authentication)."
    )

    @property
    def namespace_set(self) -> frozenset[str] | None:
        """The namespaces to run jobs in, None for all."""
        return frozenset(n.strip() for n in self.namespaces.split(",") if n.strip()) or None

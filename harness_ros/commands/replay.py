"""``harness-ros replay BAG --mode consolidate|live``: regression-test consolidation on recordings.

consolidate  rebuild each recorded task's trajectory from the bag's events and run
             FileMemory consolidation on the completed ones; print every proposed entry
             with accepted/rejected and the rule; ``--expect FILE`` exits 1 on a difference
             (the CI check), ``--write-expect FILE`` writes the golden file.
live         publish the recorded sensor topics and /clock at recorded timing (``--rate``)
             and re-send the recorded instructions to a running harness node.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig
    from harness_ros.replay import RecordedTask, TaskOutcome
    from harness_ros.ros.bag import BagContents


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "replay",
        help="replay a recorded rosbag: re-run consolidation (CI check) or publish it live",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("bag", type=Path, help="rosbag2 folder (MCAP or sqlite3), or a bare .mcap/.db3")
    parser.add_argument("--mode", choices=("consolidate", "live"), default="consolidate")
    parser.add_argument("--config", type=Path, help="YAML config (model, memory threshold)")
    parser.add_argument("--events-topic", help="harness events topic (default: the one ending in /events)")
    group = parser.add_argument_group("consolidate")
    group.add_argument(
        "--memory", type=Path, help="memory folder to consolidate into (default: a fresh temp one)"
    )
    group.add_argument("--model", help="litellm model string for the consolidator (default: the config's)")
    group.add_argument("--model-replies", type=Path, help="serve recorded model replies (JSONL) instead")
    group.add_argument(
        "--lenient-replies",
        action="store_true",
        help="serve recorded replies in order even when the request differs from the recorded one",
    )
    group.add_argument(
        "--from-recording",
        action="store_true",
        help="re-propose the entries the original run's model proposed (no model needed)",
    )
    group.add_argument(
        "--expect", type=Path, help="expected accepted entries (YAML/JSON); exit 1 on a difference"
    )
    group.add_argument("--write-expect", type=Path, help="write the accepted entries as an expected file")
    group.add_argument("--dry-run", action="store_true", help="decide entries but write nothing to memory")
    live = parser.add_argument_group("live")
    live.add_argument("--rate", type=float, default=1.0, help="playback speed factor (default 1.0)")
    live.add_argument("--topics", nargs="+", help="only these recorded topics (default: all sensor topics)")
    live.add_argument("--instruction-topic", help="send recorded instructions here (default: as recorded)")
    live.add_argument("--no-instruction", action="store_true", help="do not re-send recorded instructions")
    live.add_argument("--no-clock", action="store_true", help="do not publish /clock")
    live.add_argument(
        "--wait-subscribers",
        type=float,
        default=5.0,
        metavar="S",
        help="wait up to S seconds for subscribers before playing (default 5)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness_ros.errors import BagError
    from harness_ros.ros.bag import open_bag

    try:
        bag = open_bag(args.bag)
    except BagError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.mode == "live":
        return _run_live(args, bag)
    return _run_consolidate(args, bag)


# ---------------------------------------------------------------------- progress
@contextmanager
def _progress(total: int, desc: str) -> Iterator[Callable[[int], None] | None]:
    """A tqdm bar on stderr when it is a terminal (never in CI logs)."""
    if not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=desc, unit="msg", file=sys.stderr, leave=False) as bar:
        yield bar.update


# ---------------------------------------------------------------------- consolidate
def _load_config(path: Path | None) -> HarnessConfig:
    from harness_ros.config import HarnessConfig, load_config

    return load_config(path) if path is not None else HarnessConfig()


def _read_tasks(args: argparse.Namespace, bag: BagContents) -> tuple[list[RecordedTask], int]:
    """The recorded tasks, and how many event messages were skipped (each named on stderr)."""
    from harness_ros.replay import rebuild_tasks
    from harness_ros.ros.bag import SkippedMessage, find_events_topic, iter_events

    topic = find_events_topic(bag, args.events_topic)
    skipped: list[SkippedMessage] = []

    def skip(message: SkippedMessage) -> None:
        skipped.append(message)
        print(message.describe(), file=sys.stderr)

    with _progress(bag.topics[topic].count, "reading events") as tick:

        def events() -> Iterator[dict[str, Any]]:
            for event in iter_events(bag, topic, on_skip=skip):
                if tick is not None:
                    tick(1)
                yield event

        tasks = rebuild_tasks(events())
    print(
        f"bag {str(bag.path)!r}: {bag.storage}, {bag.message_count} messages, {bag.duration_s:.1f} s; "
        f"events on {topic}: {len(tasks)} task(s)"
        + (f", {len(skipped)} message(s) skipped" if skipped else "")
    )
    return tasks, len(skipped)


def _consolidator(
    args: argparse.Namespace, config: HarnessConfig, tasks: list[RecordedTask], tmp: Path
) -> Any:
    from harness_ros.errors import ConfigError
    from harness_ros.memory.model_policies import ModelMemoryConsolidator
    from harness_ros.replay import RecordedProposalsConsolidator, consolidation_replies

    chosen = [flag for flag in ("model", "model_replies", "from_recording") if getattr(args, flag)]
    if len(chosen) > 1:
        raise ConfigError("choose one of --model, --model-replies, --from-recording")
    if args.from_recording:
        return RecordedProposalsConsolidator.from_tasks(tasks)
    threshold = config.memory.min_confidence
    if args.model_replies is not None:
        from harness_ros.model import ReplayModel

        replies = consolidation_replies(args.model_replies, tmp)
        model = ReplayModel(replies, verify=not args.lenient_replies)
        model.name = f"replay:{args.model_replies}"
        return ModelMemoryConsolidator(model, min_confidence=threshold)
    if config.memory.consolidator == "none" and args.model is None:
        raise ConfigError("memory.consolidator is 'none': pass --model, --model-replies or --from-recording")
    from harness_ros.model import build_model
    from harness_ros.plugins import model_provider

    chat = build_model(config, model=args.model, providers=model_provider)
    return ModelMemoryConsolidator(chat, min_confidence=threshold)


def _print_outcome(task: RecordedTask, outcome: TaskOutcome) -> None:
    print(f"task {task.task_id} ({task.status or 'unfinished'}): {task.instruction!r}")
    if outcome.skipped is not None:
        print(f"  skipped: {outcome.skipped}")
        return
    if not outcome.decisions:
        print("  no entries proposed")
    for decision in outcome.decisions:
        verdict = "accepted" if decision.get("accepted") else "rejected"
        if decision.get("kind") == "memory":
            where = str(decision.get("section"))
        else:
            where = f"{decision.get('tool')}/{decision.get('outcome')}"
        print(
            f"  {verdict:8} {decision.get('kind')} [{where}] {decision.get('text')!r} "
            f"(confidence {decision.get('confidence')}, rule {decision.get('rule')})"
        )


def _run_consolidate(args: argparse.Namespace, bag: BagContents) -> int:
    from harness_ros.memory import FileMemory
    from harness_ros.replay import compare, format_diffs, load_expect, replay_consolidation, write_expect

    config = _load_config(args.config)
    expected = load_expect(args.expect) if args.expect is not None else None
    tasks, skipped = _read_tasks(args, bag)
    with tempfile.TemporaryDirectory(prefix="harness-replay-") as tmp_name:
        tmp = Path(tmp_name)
        consolidator = _consolidator(args, config, tasks, tmp)
        memory_dir = args.memory if args.memory is not None else tmp / "memory"
        # The node's memory settings (threshold, audit rotation, budget): replay decides as the robot would.
        memory = FileMemory.from_config(config.memory, root=memory_dir, consolidator=consolidator)
        with _progress(len(tasks), "consolidating") as tick:
            outcomes = replay_consolidation(tasks, memory, dry_run=args.dry_run, progress=tick)
    for task, outcome in zip(tasks, outcomes, strict=True):
        _print_outcome(task, outcome)
    accepted = sum(len(o.accepted) for o in outcomes)
    consolidated = sum(1 for o in outcomes if o.skipped is None)
    where = str(args.memory) if args.memory is not None else "a temporary folder (discarded)"
    print(
        f"summary: {len(tasks)} task(s), {consolidated} consolidated, {accepted} accepted into {where}; "
        f"{skipped} message(s) skipped"
    )
    if args.write_expect is not None:
        write_expect(args.write_expect, outcomes, bag=bag.path.name)
        print(f"wrote expected entries to {str(args.write_expect)!r}")
    if expected is not None:
        diffs = [diff for diff in compare(expected, outcomes) if not diff.empty]
        if diffs:
            print(f"DIFFERENCE from {str(args.expect)!r}:\n{format_diffs(diffs)}")
            return 1
        print(f"expected entries match {str(args.expect)!r}")
    return 0


# ---------------------------------------------------------------------- live
def _run_live(args: argparse.Namespace, bag: BagContents) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException

    from harness_ros.ros.bag.live_replay import LiveReplayer
    from harness_ros.ros.compat import ros_init

    ros_args = ["harness_replay", *(getattr(args, "ros_args", None) or [])]
    with ros_init(args=ros_args):
        node = rclpy.create_node("harness_replay")
        replayer: LiveReplayer | None = None
        try:
            replayer = LiveReplayer(
                node,
                bag,
                rate=args.rate,
                topics=args.topics,
                instruction_topic=args.instruction_topic,
                send_instructions=not args.no_instruction,
                publish_clock=not args.no_clock,
            )
            unmatched = replayer.wait_for_subscribers(args.wait_subscribers)
            if unmatched:
                print(
                    f"warning: no subscriber yet on {', '.join(unmatched)}; playing anyway", file=sys.stderr
                )
            print(f"playing {str(bag.path)!r} ({bag.duration_s:.1f} s recorded) at rate {args.rate:g}")
            with _progress(bag.message_count, "replaying") as tick:
                stats = replayer.run(progress=tick, on_skip=lambda m: print(m.describe(), file=sys.stderr))
        except (KeyboardInterrupt, ExternalShutdownException):
            print("interrupted", file=sys.stderr)
            return 130
        finally:
            if replayer is not None:
                replayer.destroy()
            node.destroy_node()
    sent = ", ".join(f"{topic} {count}" for topic, count in stats.published.items()) or "nothing"
    print(
        f"published: {sent}; instructions re-sent: {stats.instructions}; /clock ticks: {stats.clock_ticks}; "
        f"{len(stats.skipped)} message(s) skipped"
    )
    return 0

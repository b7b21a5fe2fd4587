"""Training curves from the JSON lines `glimmer-train --metrics` writes
(one object per step: "step", "loss", and after step 0 "grad_norm",
"tokens_per_s", ...): loss, grad norm and tokens/s against step.

    runs = [("unsharded", read_metrics("base.jsonl"))]
    plot_runs(runs, "run.png")
"""

import json
import numbers

# (metric key, axis label), one panel each.
PANELS = (("loss", "loss"), ("grad_norm", "grad norm"),
          ("tokens_per_s", "tokens/s"))
_STYLES = ("o-", "x--", "s:", "^-.")


class MetricsError(ValueError):
    """A metrics file that cannot be read or is not glimmer-train's
    format."""


def read_metrics(path):
    """The records of a metrics file, in order; raises MetricsError for a
    missing, empty or malformed file (naming the file and line)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise MetricsError(f"cannot read metrics file '{path}': "
                           f"{e.strerror}") from None
    except UnicodeDecodeError:
        raise MetricsError(f"metrics file '{path}' is not text") from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise MetricsError(f"{path}:{number}: not a JSON line "
                               f"({e.msg})") from None
        if (not isinstance(record, dict) or
                not isinstance(record.get("step"), int) or
                not isinstance(record.get("loss"), numbers.Real)):
            raise MetricsError(f"{path}:{number}: expected an object with "
                               "an integer \"step\" and a number \"loss\" "
                               "(glimmer-train --metrics)")
        records.append(record)
    if not records:
        raise MetricsError(f"metrics file '{path}' holds no steps")
    return records


def plot_runs(runs, path, title=None):
    """Writes a PNG of one panel per metric in PANELS, one line per run.

    runs: a list of (label, records) with records as read_metrics returns
    them; a metric a run did not record (step 0 has no grad norm) is left
    out of its line.
    """
    # The Figure API needs no pyplot backend: usable in any process.
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
    fig = Figure(figsize=(13, 4))
    axes = fig.subplots(1, len(PANELS))
    for ax, (key, label) in zip(axes, PANELS):
        for i, (name, records) in enumerate(runs):
            points = [(r["step"], r[key]) for r in records if key in r]
            if points:
                steps, values = zip(*points)
                ax.plot(steps, values, _STYLES[i % len(_STYLES)], label=name)
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(label)
        ax.set_title(label)
        if len(runs) > 1 and ax.has_data():
            ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")

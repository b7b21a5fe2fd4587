"""The `glimmer` command.

    glimmer train MODEL [glimmer-train flags]     compile and train
    glimmer compile MODEL [glimmer-train flags]   compile only (--steps=0)
    glimmer run PROGRAM [glimmer-run flags]       run a compiled program
    glimmer plot METRICS.jsonl... -o RUN.png      loss, grad norm, tokens/s

train, compile and run execute the package's own glimmer-train and
glimmer-run (glimmer/bin), so their flags, messages and exit codes are the
C++ tools'. LibTorch is the installed torch package's: its directory is put
on the tools' library path, wherever torch is installed.
"""

import argparse
import importlib.util
import os
import sys

# Subcommand -> (tool, arguments put before the user's, one-line help).
TOOLS = {
    "train": ("glimmer-train", [],
              "compile a model and train it (glimmer-train)"),
    "compile": ("glimmer-train", ["--steps=0"],
                "compile a model into the program cache without training "
                "(glimmer-train --steps=0)"),
    "run": ("glimmer-run", [],
            "train a compiled program without the compiler (glimmer-run)"),
}


def tool_path(name):
    """The package's copy of a C++ tool (glimmer/bin/NAME)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin",
                        name)


def _tool_environment():
    env = dict(os.environ)
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        torch_lib = os.path.join(os.path.dirname(spec.origin), "lib")
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (torch_lib, env.get("LD_LIBRARY_PATH")) if p)
    return env


def _exec_tool(command, args):
    name, fixed, _ = TOOLS[command]
    path = tool_path(name)
    if not os.access(path, os.X_OK):
        print(f"glimmer {command}: error: '{path}' is missing (the package "
              "was built without it)", file=sys.stderr)
        return 1
    if command == "compile" and any(a in ("-h", "--help", "-help")
                                    for a in args):
        print("glimmer compile MODEL [flags]: glimmer-train's flags; it "
              "compiles (--emit-cpp=FILE, --emit-mlir=FILE to keep the "
              "results) and trains no step\n", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(path, [name] + fixed + list(args), _tool_environment())


def _plot(args):
    from .plot import MetricsError, plot_runs, read_metrics
    try:
        runs = [(os.path.basename(p), read_metrics(p)) for p in args.metrics]
        plot_runs(runs, args.output, title=args.title)
    except MetricsError as e:
        print(f"glimmer plot: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"glimmer plot: error: cannot write '{args.output}': "
              f"{e.strerror}", file=sys.stderr)
        return 1
    print(f"glimmer plot: wrote {args.output}")
    return 0


def _parser():
    parser = argparse.ArgumentParser(
        prog="glimmer",
        description="Glimmer: compile vision-language models for SPMD "
        "training, train them, and plot the runs.",
        epilog="`glimmer COMMAND --help` shows a command's flags.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND",
                                     required=True)
    for command, (_, _, summary) in TOOLS.items():
        # Their flags are the tools' own: parsed (and --help answered) there.
        commands.add_parser(command, help=summary, add_help=False)
    plot = commands.add_parser(
        "plot", help="plot loss, grad norm and tokens/s against step from "
        "glimmer-train --metrics files",
        description="Plots loss, grad norm and tokens/s against step from "
        "the JSON lines glimmer-train --metrics (or glimmer-run --metrics) "
        "writes; one line per file.")
    plot.add_argument("metrics", nargs="+", metavar="METRICS.jsonl")
    plot.add_argument("-o", "--output", required=True, metavar="PNG",
                      help="the image to write")
    plot.add_argument("--title", help="a title above the panels")
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in TOOLS:
        return _exec_tool(argv[0], argv[1:])
    args = _parser().parse_args(argv)
    return _plot(args)


if __name__ == "__main__":
    sys.exit(main())

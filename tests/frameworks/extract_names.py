#!/usr/bin/env python3
"""Regenerates the framework name lists in this folder from the frameworks' own sources, so
that the export tests check our output against names the frameworks really accept.

usage: extract_names.py MEGATRON_GIT TORCHTITAN_GIT NANOTRON_GIT DEEPSPEED_GIT
(each a git directory of a clone; the commits read are written into each list's header)

Megatron-LM: every whole '--flag' string literal in megatron/training/arguments.py, plus the
flags ArgumentGroupFactory (megatron/training/argument_utils.py) derives from the fields of the
configuration dataclasses: "--" + name with "_" -> "-", and "--no-"/"--disable-" for a bool
field whose default is True.
torchtitan v0.2.2: "section.key" for every field of the dataclasses in
torchtitan/config/job_config.py that JobConfig holds (TOML [section] key = ...).
nanotron: "section.key" for the fields of ParallelismArgs, TokensArgs, OptimizerArgs, ModelArgs
and LlamaConfig (src/nanotron/config/), under the YAML sections Config gives them.
DeepSpeed: every key named in docs/_pages/config-json.md (***key***, <i>**key**</i>, "key":).
"""
import ast, re, subprocess, sys

def show(git, rev, path):
    return subprocess.run(["git", "--git-dir", git, "show", f"{rev}:{path}"], check=True,
                          capture_output=True, text=True).stdout

def head(git, rev):
    return subprocess.run(["git", "--git-dir", git, "log", "-1", "--format=%H %cs", rev], check=True,
                          capture_output=True, text=True).stdout.strip()

def dataclass_fields(src):
    """{class: [(field, default_is_true_bool, bases)]} for every class with annotated fields"""
    out = {}
    for node in ast.walk(ast.parse(src)):
        if not isinstance(node, ast.ClassDef):
            continue
        fields = []
        for st in node.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                ann = ast.unparse(st.annotation)
                default, names = st.value, None
                if isinstance(default, ast.Call) and ast.unparse(default.func).endswith("field"):
                    kw = {k.arg: k.value for k in default.keywords}
                    default = kw.get("default")
                    meta = kw.get("metadata")
                    if meta is not None:  # field(metadata={"argparse_meta": {"arg_names": [...]}})
                        names = re.findall(r"'(--[a-z][a-z0-9-]*)'", ast.unparse(meta)) or None
                true_bool = ann.startswith("bool") and isinstance(default, ast.Constant) and default.value is True
                fields.append((st.target.id, names if names else true_bool))
        out[node.name] = (fields, [ast.unparse(b) for b in node.bases])
    return out

def all_fields(classes, name):
    fields, bases = classes.get(name, ([], []))
    res = []
    for b in bases:
        res += all_fields(classes, b.split(".")[-1])
    return res + fields

def megatron(git):
    rev = "HEAD"
    args = show(git, rev, "megatron/training/arguments.py")
    names = set(re.findall(r"'(--[a-z][a-z0-9-]*)'", args)) | set(re.findall(r'"(--[a-z][a-z0-9-]*)"', args))
    files = ["megatron/core/model_parallel_config.py", "megatron/core/transformer/transformer_config.py"]
    ls = subprocess.run(["git", "--git-dir", git, "ls-tree", "--name-only", rev, "megatron/training/config/"],
                        check=True, capture_output=True, text=True).stdout.split()
    classes = {}
    for f in files + ls:
        if f.endswith(".py"):
            classes.update(dataclass_fields(show(git, rev, f)))
    factories = set(re.findall(r"ArgumentGroupFactory\((\w+)", args))
    for c in factories:
        for f, true_bool in all_fields(classes, c):
            if isinstance(true_bool, list):  # names given by the field's argparse metadata
                names |= set(true_bool)
            elif true_bool:
                names |= {"--no-" + f.replace("_", "-"), "--disable-" + f.replace("_", "-")}
            else:
                names.add("--" + f.replace("_", "-"))
    hdr = [f"# Megatron-LM pretrain_gpt.py argument names: NVIDIA/Megatron-LM {head(git, rev)}",
           "# megatron/training/arguments.py (add_argument literals) and the dataclass fields of",
           "# " + ", ".join(sorted(factories)) + " (ArgumentGroupFactory)"]
    return hdr, sorted(names)

def torchtitan(git):
    rev = "v0.2.2"
    classes = dataclass_fields(show(git, rev, "torchtitan/config/job_config.py"))
    names = []
    src = show(git, rev, "torchtitan/config/job_config.py")
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "JobConfig":
            for st in node.body:
                if isinstance(st, ast.AnnAssign):
                    sec, cls = st.target.id, ast.unparse(st.annotation)
                    names += [f"{sec}.{f}" for f, _ in all_fields(classes, cls)]
    hdr = [f"# torchtitan job config keys (TOML [section] key): pytorch/torchtitan {rev} = {head(git, rev)}",
           "# torchtitan/config/job_config.py, fields of the sections JobConfig holds"]
    return hdr, sorted(set(names))

def nanotron(git):
    rev = "HEAD"
    classes = {}
    for f in ["parallelism_config.py", "config.py", "models_config.py"]:
        classes.update(dataclass_fields(show(git, rev, "src/nanotron/config/" + f)))
    sections = {"parallelism": "ParallelismArgs", "tokens": "TokensArgs", "optimizer": "OptimizerArgs",
                "model": "ModelArgs", "model.model_config": "LlamaConfig",
                "model.model_config.moe_config": "MoEConfig"}
    names = []
    for sec, cls in sections.items():
        if cls in classes:
            names += [f"{sec}.{f}" for f, _ in all_fields(classes, cls)]
    hdr = [f"# nanotron YAML keys (section.key): huggingface/nanotron {head(git, rev)}",
           "# src/nanotron/config/{parallelism_config,config,models_config}.py: " +
           ", ".join(f"{s} = {c}" for s, c in sections.items() if c in classes)]
    return hdr, sorted(set(names))

def deepspeed(git):
    rev = "HEAD"
    doc = show(git, rev, "docs/_pages/config-json.md")
    names = set(re.findall(r"\*\*\*([a-z][a-z0-9_]*)\*\*\*", doc))
    names |= set(re.findall(r"<i>\*\*([a-z][a-z0-9_]*)\*\*</i>", doc))
    names |= set(re.findall(r"<i>\*\*[a-z0-9_]+:([a-z][a-z0-9_]*)\*\*</i>", doc))
    names |= set(re.findall(r'"([a-z][a-z0-9_]*)"\s*:', doc))
    hdr = [f"# DeepSpeed config JSON keys: deepspeedai/DeepSpeed {head(git, rev)}",
           "# docs/_pages/config-json.md (\"DeepSpeed Configuration JSON\")"]
    return hdr, sorted(names)

if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    for fn, git, out in [(megatron, sys.argv[1], "megatron.txt"), (torchtitan, sys.argv[2], "torchtitan.txt"),
                         (nanotron, sys.argv[3], "nanotron.txt"), (deepspeed, sys.argv[4], "deepspeed.txt")]:
        hdr, names = fn(git)
        with open(out, "w") as f:
            f.write("\n".join(hdr) + "\n# generated by tests/frameworks/extract_names.py\n")
            f.write("\n".join(names) + "\n")
        print(out, len(names))

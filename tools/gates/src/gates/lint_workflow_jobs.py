"""The release rules the linters do not know, for `make lint-workflows`
(scripts/lint-workflows.sh), on each workflow file given:

- A job that may ask for an OIDC token (`id-token: write`, its own or the
  workflow's) runs nothing that compiles or installs third-party code:
  no `cargo`, `sam build`, `make`, `npm`, `pip`, `cargo-lambda`. Those run in
  a job without it: a dependency's build script or proc macro never sees
  the role's keys.
- A job that obtains AWS credentials (an OIDC token, the
  configure-aws-credentials action, AWS keys in its environment) runs
  nothing the build made either: the build's output is data there (zips and
  templates handed to the AWS CLI), never a program. Deny by default: each
  command such a job runs must be a tool of the runner's own (TOOLS) or a
  file of the repository's scripts/ (python3 only on such a file, or on a
  module of its own package, `python3 -m gates.NAME`), and no
  step uses a local or docker action. So a binary of the build (the smoke
  check), run directly, copied elsewhere first, or handed to an
  interpreter, fails the lint; it runs in a job that holds nothing.
- A job that assumes the prod role (vars.AWS_PROD_DEPLOY_ROLE_ARN) names
  the environment prod (whose reviewers approve it; the role trusts nothing
  else), runs only from main on a manual dispatch, and fetches the build
  only with --ancestor-of (the tagged commit must be on main).
- Only a job that assumes the publish role (vars.AWS_BUILD_PUBLISH_ROLE_ARN)
  publishes a build; it names the environment build and runs only on a push
  to main.

Exit 1, naming the file, the job and the rule.
"""

import re
import shlex
import sys

import yaml

from gates.repo import ROOT

BUILDS = re.compile(r"(^|[\s;&|(])(cargo|cargo-lambda|make|npm|npx|pip3?|sam\s+build)(\s|$)", re.M)
# What a job holding credentials may run besides the repository's scripts/:
# the runner's own tools, none of which runs code it is handed.
TOOLS = {"aws", "git", "echo", "printf", "test", "[", "[[", "sha256sum", "grep", "cut", "cat", "mkdir",
         "true", "false", "exit", "set", "export", "cd"}
INTERPRETERS = {"bash", "sh", "python", "python3", "node", "perl", "ruby", "source", "."}
WRAPPERS = {"env", "exec", "command", "nohup", "sudo", "timeout", "xargs", "time", "!"}
KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}"}
SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", ";;", "|&"}
REDIRECTS = {">", ">>", "<", "<<", "<<<", ">&", "<&", "2>", "&>"}
AWS_KEYS = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_WEB_IDENTITY_TOKEN_FILE"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")


def holds_id_token(permissions) -> bool:
    if permissions == "write-all":
        return True
    return isinstance(permissions, dict) and permissions.get("id-token") == "write"


def obtains_credentials(job: dict, workflow: dict) -> bool:
    if holds_id_token(job.get("permissions", workflow.get("permissions"))):
        return True
    steps = job.get("steps", [])
    if any("configure-aws-credentials" in str(step.get("uses", "")) for step in steps):
        return True
    envs = [workflow.get("env") or {}, job.get("env") or {}, *((step.get("env") or {}) for step in steps)]
    return any(AWS_KEYS & set(env) for env in envs if isinstance(env, dict))


def simple_commands(script: str):
    """Each simple command of a shell script as (word, arguments), command
    substitutions included; a command this cannot read is yielded whole, as
    its first word, so that it fails the allow list rather than pass it."""
    script = re.sub(r"\\\n", " ", script)
    for line in script.splitlines():
        for inner in SUBSTITUTION.findall(line):
            yield from simple_commands(inner[0] or inner[1])
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:
            yield line.split()[0] if line.split() else line, []
            continue
        command: list[str] = []
        skip = False
        for token in [*tokens, ";"]:
            if skip:
                skip = False
                continue
            if token in REDIRECTS or re.fullmatch(r"\d?[<>]{1,2}&?", token):
                skip = True
                continue
            if token in SEPARATORS:
                yield from split_command(command)
                command = []
            else:
                command.append(token)


def split_command(words: list[str]):
    while words and (ASSIGNMENT.match(words[0]) or words[0] in KEYWORDS):
        words = words[1:]
    if not words or words[0] in {"for", "case", "in", "esac"}:
        return
    if words[0] in WRAPPERS:
        rest = [w for w in words[1:] if not w.startswith("-")]
        if words[0] == "timeout" and rest:
            rest = rest[1:]
        yield from split_command(rest)
        return
    yield words[0], words[1:]


def repository_script(path: str) -> bool:
    path = path.removeprefix("./")
    return bool(re.fullmatch(r"scripts/[\w.-]+", path)) and (ROOT / path).is_file()


def repository_module(arguments: list[str]) -> bool:
    """`python3 -m gates.NAME`: a module of the repository's own package
    (tools/gates, run from its source with PYTHONPATH=tools/gates/src)."""
    if len(arguments) < 2 or arguments[0] != "-m":
        return False
    name = arguments[1]
    if not re.fullmatch(r"gates\.[a-z_]+", name):
        return False
    return (ROOT / "tools/gates/src" / (name.replace(".", "/") + ".py")).is_file()


# How a step runs the pipeline's artifact tool: by module, or (older
# workflows) by its former script.
ARTIFACTS = r"(?:gates\.pipeline_artifacts|pipeline-artifacts\.py)"


def built_dirs(job: dict) -> list[str]:
    """Where the job puts what a build made: downloaded artifacts, fetched builds."""
    dirs = []
    for step in job.get("steps", []):
        if "download-artifact" in str(step.get("uses", "")):
            dirs.append(str((step.get("with") or {}).get("path", ".")).strip("/") or ".")
        for match in re.finditer(ARTIFACTS + r"\s+fetch\s+\S+\s+(\S+)", step.get("run", "")):
            dirs.append(match.group(1).strip("\"'/"))
    return dirs


def runs_built(job_name: str, job: dict, path: str) -> list[str]:
    found = []
    dirs = built_dirs(job)
    for step in job.get("steps", []):
        label = step.get("name") or step.get("uses") or step.get("run", "").splitlines()[0]
        uses = str(step.get("uses", ""))
        if uses.startswith(("./", "docker://")):
            found.append(f"{path}: job {job_name} obtains AWS credentials and uses a local or docker action: {label}")
        for word, arguments in simple_commands(step.get("run", "")):
            target = word
            if word in INTERPRETERS and repository_module(arguments):
                continue
            if word in INTERPRETERS:
                scripts = [a for a in arguments if not a.startswith("-")]
                if any(a in ("-c", "-") for a in arguments) or not scripts or not repository_script(scripts[0]):
                    found.append(f"{path}: job {job_name} obtains AWS credentials and hands {word} code that is "
                                 f"not a file of the repository's scripts/: {label}")
                    continue
                target = scripts[0]
            bare = target.removeprefix("./")
            if any(d == "." or bare == d or bare.startswith(d + "/") for d in dirs):
                found.append(f"{path}: job {job_name} obtains AWS credentials and runs {target}, which the build "
                             f"made: run it in a job without credentials ({label})")
            elif "/" in target:
                if not repository_script(target):
                    found.append(f"{path}: job {job_name} obtains AWS credentials and runs {target}, not a file "
                                 f"of the repository's scripts/ ({label})")
            elif target not in TOOLS and target not in INTERPRETERS:
                found.append(f"{path}: job {job_name} obtains AWS credentials and runs {target}, not one of "
                             f"the tools such a job may run ({label})")
    return found


def problems(path: str) -> list[str]:
    workflow = yaml.safe_load(open(path))
    found = []
    for name, job in (workflow.get("jobs") or {}).items():
        permissions = job.get("permissions", workflow.get("permissions"))
        text = yaml.safe_dump(job)
        if holds_id_token(permissions):
            for step in job.get("steps", []):
                if BUILDS.search(step.get("run", "")):
                    found.append(f"{path}: job {name} holds id-token: write and builds or installs: "
                                 f"{step.get('name') or step['run'].splitlines()[0]}")
        if obtains_credentials(job, workflow):
            found += runs_built(name, job, path)
        if "AWS_PROD_DEPLOY_ROLE_ARN" in text:
            environment = job.get("environment")
            if environment != "prod" and not (isinstance(environment, dict) and environment.get("name") == "prod"):
                found.append(f"{path}: job {name} assumes the prod role without environment: prod")
            condition = str(job.get("if", ""))
            if "workflow_dispatch" not in condition or "refs/heads/main" not in condition:
                found.append(f"{path}: job {name} assumes the prod role but may run other than "
                             "from main on a manual dispatch")
            fetches = [s.get("run", "") for s in job.get("steps", []) if re.search(ARTIFACTS + r"\s+fetch", s.get("run", ""))]
            if not fetches or any("--ancestor-of" not in run for run in fetches):
                found.append(f"{path}: job {name} assumes the prod role and fetches a build without "
                             "--ancestor-of: a commit main never had could be deployed")
        publishes = any(re.search(ARTIFACTS + r"\s+publish", s.get("run", "")) for s in job.get("steps", []))
        if publishes and "AWS_BUILD_PUBLISH_ROLE_ARN" not in text:
            found.append(f"{path}: job {name} publishes a build without the publish role (only it writes builds/)")
        if "AWS_BUILD_PUBLISH_ROLE_ARN" in text:
            environment = job.get("environment")
            if environment != "build" and not (isinstance(environment, dict) and environment.get("name") == "build"):
                found.append(f"{path}: job {name} assumes the publish role without environment: build")
            condition = str(job.get("if", ""))
            if "'push'" not in condition or "refs/heads/main" not in condition:
                found.append(f"{path}: job {name} assumes the publish role but may run other than on a push to main")
    return found


def main() -> int:
    found = [p for path in sys.argv[1:] for p in problems(path)]
    print(*found, sep="\n", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

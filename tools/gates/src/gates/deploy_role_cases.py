"""What `make deploy-role-check` (gates.deploy_role_check) asks the IAM
simulator about the pipeline's roles, and the loosened templates that must
fail it. Stack names are samconfig.toml's (deploy_roles.stage_stacks)."""

from gates.deploy_roles import ACCOUNT, BUCKET, EDGE, REGION, REPO, ROLES, role_arn, stack_key_policy, stage_stacks

AUDIENCE = "sts.amazonaws.com"
MAIN_WORKFLOW = f"{REPO}/.github/workflows/release.yml@refs/heads/main"


def token(context, aud=AUDIENCE, workflow=MAIN_WORKFLOW, subject="customized"):
    """A job's token as IAM sees it: `sub` as the repository's OIDC subject
    template (repo, context, job_workflow_ref) makes it, from its context
    (repo:OWNER/NAME:environment:prod, ...:ref:refs/heads/main, ...), and
    `aud`. No job_workflow_ref key of its own: AWS may not expose it, so no
    trust may rest on it. subject="default": a repository that kept GitHub's
    default template (sub is the context alone)."""
    sub = f"{context}:job_workflow_ref:{workflow}" if subject == "customized" else context
    return {"sub": sub, "aud": aud}


def trust_cases():
    """(role, the token's claims, expected): who may assume which role."""
    env_prod = f"repo:{REPO}:environment:prod"
    return [
        ("DevDeployRole", token(f"repo:{REPO}:ref:refs/heads/main"), True),
        ("ProdDeployRole", token(env_prod), True),
        # A tag alone: its run has the tag's ref, and its own workflow.
        ("ProdDeployRole", token(f"repo:{REPO}:ref:refs/tags/v1.4.0",
                                 workflow=f"{REPO}/.github/workflows/release.yml@refs/tags/v1.4.0"), False),
        ("ProdDeployRole", token(f"repo:{REPO}:ref:refs/tags/v1.4.0"), False),
        # The environment prod named by a workflow read from a tag or a branch.
        ("ProdDeployRole", token(env_prod, workflow=f"{REPO}/.github/workflows/release.yml@refs/tags/v1.4.0"), False),
        ("ProdDeployRole", token(env_prod, workflow=f"{REPO}/.github/workflows/release.yml@refs/heads/feature"), False),
        ("ProdDeployRole", token(env_prod, workflow=f"{REPO}/.github/workflows/other.yml@refs/heads/main"), False),
        # A pull request, from a branch of the repository or from a fork.
        ("DevDeployRole", token(f"repo:{REPO}:pull_request"), False),
        ("ProdDeployRole", token(f"repo:{REPO}:pull_request"), False),
        # A fork's own runs carry the fork's name.
        ("DevDeployRole", token("repo:someone-else/petstore:ref:refs/heads/main"), False),
        ("ProdDeployRole", token("repo:someone-else/petstore:environment:prod",
                                 workflow="someone-else/petstore/.github/workflows/release.yml@refs/heads/main"), False),
        # Another repository of the same owner, and a name that only starts alike.
        ("DevDeployRole", token("repo:example-org/other:ref:refs/heads/main"), False),
        ("ProdDeployRole", token("repo:example-org/other:environment:prod"), False),
        ("DevDeployRole", token(f"repo:{REPO}-fork:ref:refs/heads/main"), False),
        ("ProdDeployRole", token(f"repo:{REPO}-fork:environment:prod"), False),
        # Another branch, a branch named like main, another environment.
        ("DevDeployRole", token(f"repo:{REPO}:ref:refs/heads/feature"), False),
        ("DevDeployRole", token(f"repo:{REPO}:ref:refs/heads/main-old"), False),
        ("ProdDeployRole", token(f"repo:{REPO}:ref:refs/heads/main"), False),
        ("ProdDeployRole", token(f"repo:{REPO}:environment:staging"), False),
        ("DevDeployRole", token(f"repo:{REPO}:ref:refs/tags/v1.4.0"), False),
        ("DevDeployRole", token(f"repo:{REPO}:environment:dev"), False),
        ("DevDeployRole", token(env_prod), False),
        # The publisher: the environment build of main's release.yml only.
        ("BuildPublishRole", token(f"repo:{REPO}:environment:build"), True),
        ("BuildPublishRole", token(f"repo:{REPO}:ref:refs/heads/main"), False),
        ("BuildPublishRole", token(env_prod), False),
        ("BuildPublishRole", token(f"repo:{REPO}:environment:build",
                                   workflow=f"{REPO}/.github/workflows/release.yml@refs/heads/feature"), False),
        ("BuildPublishRole", token(f"repo:{REPO}:environment:build",
                                   workflow=f"{REPO}/.github/workflows/release.yml@refs/tags/v1.4.0"), False),
        ("BuildPublishRole", token(f"repo:{REPO}:pull_request"), False),
        ("BuildPublishRole", token("repo:someone-else/petstore:environment:build",
                                   workflow="someone-else/petstore/.github/workflows/release.yml@refs/heads/main"), False),
        ("DevDeployRole", token(f"repo:{REPO}:environment:build"), False),
        ("ProdDeployRole", token(f"repo:{REPO}:environment:build"), False),
        # The default subject template: the right context, but no workflow in
        # sub; the trust then admits nothing (it does not fall back to the context).
        ("DevDeployRole", token(f"repo:{REPO}:ref:refs/heads/main", subject="default"), False),
        ("ProdDeployRole", token(env_prod, subject="default"), False),
        ("BuildPublishRole", token(f"repo:{REPO}:environment:build", subject="default"), False),
        # Main's branch with another workflow of the repository, for dev too.
        ("DevDeployRole", token(f"repo:{REPO}:ref:refs/heads/main",
                                workflow=f"{REPO}/.github/workflows/other.yml@refs/heads/main"), False),
        # A token minted for another audience.
        ("DevDeployRole", token(f"repo:{REPO}:ref:refs/heads/main", aud="https://github.com/example-org"), False),
        ("ProdDeployRole", token(env_prod, aud="https://github.com/example-org"), False),
    ]


def arn(service, rest, region=REGION):
    return f"arn:aws:{service}:{region}:{ACCOUNT}:{rest}"


def stack_arn(name):
    return arn("cloudformation", f"stack/{name}/0a1b2c3d-0000-0000-0000-000000000000")


ADMIN = "arn:aws:iam::aws:policy/AdministratorAccess"
BASIC = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
EVERYTHING = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def scope_cases(docs):
    """(who, action, resource, context, expected[, {policies, resourcePolicy,
    boundary}]): what each role may do once assumed."""
    stacks = stage_stacks()
    dev, prod = stacks["dev"], stacks["prod"]
    dev_exec, prod_exec = role_arn("DevExecutionRole"), role_arn("ProdExecutionRole")
    build = f"arn:aws:s3:::{BUCKET}/builds/0123abc/packaged.yaml"
    cases = [
        *(
            (role, "cloudformation:CreateChangeSet", stack_arn(stack), {"cloudformation:RoleArn": execution},
             role == owner)
            for role, execution in (("DevDeployRole", dev_exec), ("ProdDeployRole", prod_exec))
            for stack, owner in ((dev, "DevDeployRole"), (prod, "ProdDeployRole"))
        ),
        # A deploy role runs its change sets as its own stage's execution role only.
        ("DevDeployRole", "cloudformation:CreateChangeSet", stack_arn(dev), {"cloudformation:RoleArn": prod_exec}, False),
        ("ProdDeployRole", "cloudformation:CreateChangeSet", stack_arn(prod), {"cloudformation:RoleArn": dev_exec}, False),
        ("DevDeployRole", "cloudformation:CreateChangeSet", stack_arn(dev), {}, False),
        ("ProdDeployRole", "cloudformation:CreateChangeSet", stack_arn(prod),
         {"cloudformation:RoleArn": f"arn:aws:iam::{ACCOUNT}:role/Admin"}, False),
        ("DevDeployRole", "cloudformation:CreateChangeSet", stack_arn("someone-elses-stack"),
         {"cloudformation:RoleArn": dev_exec}, False),
        ("DevDeployRole", "cloudformation:ExecuteChangeSet", stack_arn(dev), {}, True),
        ("DevDeployRole", "cloudformation:ExecuteChangeSet", stack_arn(prod), {}, False),
        ("DevDeployRole", "cloudformation:DeleteStack", stack_arn(dev), {}, False),
        ("DevDeployRole", "iam:PassRole", dev_exec, {"iam:PassedToService": "cloudformation.amazonaws.com"}, True),
        ("DevDeployRole", "iam:PassRole", prod_exec, {"iam:PassedToService": "cloudformation.amazonaws.com"}, False),
        ("ProdDeployRole", "iam:PassRole", prod_exec, {"iam:PassedToService": "cloudformation.amazonaws.com"}, True),
        *(
            (role, "iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/Admin",
             {"iam:PassedToService": "cloudformation.amazonaws.com"}, False)
            for role in ("DevDeployRole", "ProdDeployRole")
        ),
        ("DevDeployRole", "iam:CreateRole", f"arn:aws:iam::{ACCOUNT}:role/{dev}-x", {}, False),
        ("DevDeployRole", "lambda:UpdateFunctionCode", arn("lambda", f"function:{dev}-PetsFunction-X"), {}, False),
        # builds/ written once, by the publisher only: with If-None-Match: * only, never deleted.
        ("BuildPublishRole", "s3:PutObject", build, {"s3:if-none-match": "*"}, True,
         {"resourcePolicy": docs["BucketPolicy"]}),
        ("BuildPublishRole", "s3:PutObject", build, {}, False, {"resourcePolicy": docs["BucketPolicy"]}),
        ("BuildPublishRole", "s3:PutObject", f"arn:aws:s3:::{BUCKET}/deploys/prod/t.template", {}, False),
        # Dev's credentials (whatever runs with them), or any role of the account
        # allowed everything, write no build: not one for a commit main has not
        # built yet, nor the SHA256SUMS prod checks a build against.
        ("DevDeployRole", "s3:PutObject", build, {"s3:if-none-match": "*"}, False,
         {"resourcePolicy": docs["BucketPolicy"]}),
        ("DevDeployRole", "s3:PutObject", f"arn:aws:s3:::{BUCKET}/builds/{'f' * 40}/SHA256SUMS",
         {"s3:if-none-match": "*"}, False, {"policies": [EVERYTHING], "resourcePolicy": docs["BucketPolicy"]}),
        ("DevExecutionRole", "s3:PutObject", build, {"s3:if-none-match": "*"}, False,
         {"policies": [EVERYTHING], "resourcePolicy": docs["BucketPolicy"]}),
        ("DevDeployRole", "s3:GetObject", build, {}, True),
        ("DevDeployRole", "s3:DeleteObject", build, {}, False,
         {"policies": [EVERYTHING], "resourcePolicy": docs["BucketPolicy"]}),
        ("DevDeployRole", "s3:PutObject", f"arn:aws:s3:::{BUCKET}/deploys/dev/t.template", {}, True,
         {"resourcePolicy": docs["BucketPolicy"]}),
        ("ProdDeployRole", "s3:PutObject", build, {"s3:if-none-match": "*"}, False),
        ("ProdDeployRole", "s3:GetObject", build, {}, True),
        ("DevDeployRole", "s3:PutObject", f"arn:aws:s3:::{BUCKET}/deploys/prod/t.template", {}, False),
        ("DevDeployRole", "s3:GetObject", "arn:aws:s3:::another-bucket/x", {}, False),
    ]
    return cases + execution_cases(docs, dev, prod) + edge_cases(dev, prod)


def apigateway(path):
    return f"arn:aws:apigateway:{REGION}::{path}"


def edge_cases(dev, prod):
    """Each stage's edge (its custom domain, its records, its front, its HTTP
    API) out of the other stage's reach; the three ways a dev change set
    reached prod's customers are each denied. An HTTP API's own calls
    (/apis/<id>/...) are not here: the simulator has no resource type for
    API Gateway v2's (docs/releases.md says how an account shows them)."""
    domains = {dev: EDGE["DevDomainName"], prod: EDGE["ProdDomainName"]}
    zones = {dev: EDGE["DevHostedZoneId"], prod: EDGE["ProdHostedZoneId"]}
    names = "route53:ChangeResourceRecordSetsNormalizedRecordNames"
    cases = []
    for who, own, other in (("DevExecutionRole", dev, prod), ("ProdExecutionRole", prod, dev)):
        distribution = f"arn:aws:cloudfront::{ACCOUNT}:distribution/E1ABCDEFGHIJK"
        cases += [
            # Its own domain, a mapping of it, a record of it in its zone, its front.
            (who, "apigateway:POST", apigateway("/domainnames"), {}, True),
            (who, "apigateway:PATCH", apigateway(f"/domainnames/{domains[own]}/apimappings/m1"), {}, True),
            (who, "apigateway:DELETE", apigateway(f"/domainnames/{domains[own]}"), {}, True),
            (who, "route53:ChangeResourceRecordSets", f"arn:aws:route53:::hostedzone/{zones[own]}",
             {names: [domains[own]]}, True),
            (who, "cloudfront:UpdateDistribution", distribution, {"aws:ResourceTag/petstore-stack": own}, True),
            # A path of the other stage's custom domain mapped to this stage's API
            # (its mapping repointed, or a base path added), or its domain deleted.
            (who, "apigateway:PATCH", apigateway(f"/domainnames/{domains[other]}/apimappings/m1"), {}, False),
            (who, "apigateway:POST", apigateway(f"/domainnames/{domains[other]}/basepathmappings"), {}, False),
            (who, "apigateway:DELETE", apigateway(f"/domainnames/{domains[other]}"), {}, False),
            # A record in the other stage's zone (a certificate's challenge, its alias repointed),
            # or a name other than its own in its own zone.
            (who, "route53:ChangeResourceRecordSets", f"arn:aws:route53:::hostedzone/{zones[other]}",
             {names: [f"_3f1c.{domains[other]}"]}, False),
            (who, "route53:ChangeResourceRecordSets", f"arn:aws:route53:::hostedzone/{zones[other]}",
             {names: [domains[other]]}, False),
            (who, "route53:ChangeResourceRecordSets", f"arn:aws:route53:::hostedzone/{zones[own]}",
             {names: [domains[own], f"_3f1c.{domains[other]}"]}, False),
            (who, "route53:ChangeResourceRecordSets", "arn:aws:route53:::hostedzone/Z9999999999999",
             {names: [domains[own]]}, False),
            # The other stage's front repointed, re-tagged or untagged.
            (who, "cloudfront:UpdateDistribution", distribution, {"aws:ResourceTag/petstore-stack": other}, False),
            (who, "cloudfront:TagResource", distribution,
             {"aws:ResourceTag/petstore-stack": other, "aws:RequestTag/petstore-stack": own}, False),
            (who, "cloudfront:TagResource", distribution, {"aws:RequestTag/petstore-stack": other}, False),
            (who, "cloudfront:UntagResource", distribution,
             {"aws:ResourceTag/petstore-stack": own, "aws:TagKeys": ["petstore-stack"]}, False),
        ]
    return cases


# A KMS key (its ARN is an id, not a name) whose policy lets IAM grant its
# use and administration, as the stack's key's policy does for its administration.
KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ACCOUNT_KEY = {"resourcePolicy": {"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "kms:*", "Resource": "*"}]}}


def execution_cases(docs, dev, prod):
    """The execution roles and the boundaries: no path to more than a stage."""
    cases = []
    for who, own, other, boundary in (("DevExecutionRole", dev, prod, "DevBoundary"),
                                      ("ProdExecutionRole", prod, dev, "ProdBoundary")):
        with_own = {"iam:PermissionsBoundary": docs[boundary + "Arn"]}
        other_boundary = docs[("ProdBoundary" if boundary == "DevBoundary" else "DevBoundary") + "Arn"]
        role = f"arn:aws:iam::{ACCOUNT}:role/{own}-PetsFunctionRole-ABC"
        cases += [
            (who, "iam:CreateRole", role, with_own, True),
            (who, "iam:CreateRole", role, {}, False),
            (who, "iam:CreateRole", role, {"iam:PermissionsBoundary": other_boundary}, False),
            (who, "iam:PutRolePolicy", role, {}, False),
            (who, "iam:AttachRolePolicy", role, {**with_own, "iam:PolicyARN": BASIC}, True),
            (who, "iam:AttachRolePolicy", role, {**with_own, "iam:PolicyARN": ADMIN}, False),
            (who, "iam:DeleteRolePermissionsBoundary", role, {}, False),
            (who, "iam:CreateRole", f"arn:aws:iam::{ACCOUNT}:role/{other}-PetsFunctionRole-ABC", with_own, False),
            (who, "iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/{other}-PetsFunctionRole-ABC",
             {"iam:PassedToService": "lambda.amazonaws.com"}, False),
            (who, "iam:CreatePolicyVersion", f"arn:aws:iam::{ACCOUNT}:policy/{own}-{REGION}-boundary", {}, False),
            (who, "dynamodb:DeleteTable", arn("dynamodb", f"table/{own}-DataTable-ABC"), {}, True),
            (who, "dynamodb:DeleteTable", arn("dynamodb", f"table/{other}-DataTable-ABC"), {}, False),
            (who, "dynamodb:GetItem", arn("dynamodb", f"table/{other}-DataTable-ABC"), {}, False),
            (who, "lambda:CreateFunction", arn("lambda", f"function:{own}-PetsFunction-ABC"), {}, True),
            (who, "lambda:UpdateFunctionCode", arn("lambda", f"function:{other}-PetsFunction-ABC"), {}, False),
            (who, "lambda:CreateFunction", arn("lambda", f"function:CodeDeployHook_{own}-pretraffic"), {}, True),
            (who, "lambda:UpdateFunctionCode", arn("lambda", f"function:CodeDeployHook_{other}-pretraffic"), {}, False),
            (who, "lambda:CreateEventSourceMapping", "*",
             {"lambda:FunctionArn": arn("lambda", f"function:{other}-EventsFunction-ABC")}, False),
            (who, "sqs:DeleteQueue", arn("sqs", f"{other}-EventsDeadLetterQueue-ABC"), {}, False),
            # The webhook secrets key: reached only by its stage's tag, never re-tagged into reach.
            (who, "kms:CreateKey", "*", {"aws:RequestTag/petstore-stack": own}, True),
            (who, "kms:CreateKey", "*", {"aws:RequestTag/petstore-stack": other}, False),
            (who, "kms:PutKeyPolicy", KEY, {"aws:ResourceTag/petstore-stack": own}, True, ACCOUNT_KEY),
            (who, "kms:PutKeyPolicy", KEY, {"aws:ResourceTag/petstore-stack": other}, False, ACCOUNT_KEY),
            (who, "kms:TagResource", KEY,
             {"aws:ResourceTag/petstore-stack": other, "aws:RequestTag/petstore-stack": own}, False, ACCOUNT_KEY),
            (who, "kms:Decrypt", KEY, {"aws:ResourceTag/petstore-stack": other}, False, ACCOUNT_KEY),
        ]
        # The pipeline's own roles (named after the pipeline stack, which prod's
        # names take in): never changed, passed or re-tagged, boundary or not.
        # A role of the stage's name made without the boundary keeps its trust.
        for pipeline_role in ROLES:
            target = role_arn(pipeline_role)
            for context in ({}, with_own):
                cases += [(who, action, target, context, False) for action in (
                    "iam:UpdateAssumeRolePolicy", "iam:DeleteRole", "iam:TagRole", "iam:UntagRole",
                    "iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:DeleteRolePermissionsBoundary")]
            cases.append((who, "iam:PassRole", target, {"iam:PassedToService": "lambda.amazonaws.com"}, False))
        by_hand = f"arn:aws:iam::{ACCOUNT}:role/{own}-admin"
        cases += [
            (who, "iam:UpdateAssumeRolePolicy", role, with_own, True),
            (who, "iam:DeleteRole", role, with_own, True),
            (who, "iam:UpdateAssumeRolePolicy", by_hand, {}, False),
            (who, "iam:DeleteRole", by_hand, {}, False),
            (who, "iam:UpdateAssumeRolePolicy", by_hand, {"iam:PermissionsBoundary": other_boundary}, False),
        ]
        # The stage's own key as template.yaml writes its policy: its use is the
        # webhooks role's alone; no one, an administrator of the account
        # included, may grant it to another; the execution role may still
        # update the policy (CloudFormation does), no role within the boundary may.
        # (The webhooks role's own use is not asked: the simulator does not
        # match kms:EncryptionContext:<key>, which that statement requires.)
        own_key = {"resourcePolicy": stack_key_policy(own)}
        tagged = {"aws:ResourceTag/petstore-stack": own}
        webhooks = {"boundary": docs[boundary], **own_key}
        cases += [
            (f"{own}-Administrator", "kms:CreateGrant", KEY, tagged, False, {"policies": [EVERYTHING], **own_key}),
            (f"{own}-Administrator", "kms:Decrypt", KEY, tagged, False, {"policies": [EVERYTHING], **own_key}),
            (f"{own}-WebhooksRole", "kms:CreateGrant", KEY, tagged, False, {"policies": [EVERYTHING], **webhooks}),
            (f"{own}-WebhooksRole", "kms:PutKeyPolicy", KEY, tagged, False, {"policies": [EVERYTHING], **webhooks}),
            (who, "kms:PutKeyPolicy", KEY, tagged, True, own_key),
            (who, "kms:CreateGrant", KEY, tagged, False, own_key),
        ]
        # A mapping's tags, not any function's of the account.
        cases += [
            (who, "lambda:TagResource", arn("lambda", "event-source-mapping:1f2e3d4c-0000-0000-0000-000000000000"), {},
             True),
            (who, "lambda:TagResource", arn("lambda", f"function:{own}-PetsFunction-ABC"), {}, True),
            (who, "lambda:TagResource", arn("lambda", f"function:{other}-PetsFunction-ABC"), {}, False),
            (who, "lambda:TagResource", arn("lambda", "function:another-app"), {}, False),
        ]
        # A role the stack made, AdministratorAccess attached or not: no more than its stage.
        inside = {"policies": [EVERYTHING], "boundary": docs[boundary]}
        cases += [
            (f"{own}-AnyRole", "dynamodb:PutItem", arn("dynamodb", f"table/{own}-DataTable-ABC"), {}, True, inside),
            (f"{own}-AnyRole", "dynamodb:PutItem", arn("dynamodb", f"table/{other}-DataTable-ABC"), {}, False, inside),
            (f"{own}-AnyRole", "lambda:InvokeFunction", arn("lambda", f"function:{other}-PetsFunction-ABC"), {},
             False, inside),
            (f"{own}-AnyRole", "iam:CreateRole", f"arn:aws:iam::{ACCOUNT}:role/anything", {}, False, inside),
            # Its own logs, not the other stage's (prod's names take in dev's).
            (f"{own}-AnyRole", "logs:PutLogEvents",
             arn("logs", f"log-group:/aws/lambda/{own}-PetsFunction-ABC:log-stream:s"), {}, True, inside),
            *((f"{own}-AnyRole", action, arn("logs", group), {}, False, inside)
              for action in ("logs:PutLogEvents", "logs:CreateLogStream")
              for group in (f"log-group:/aws/lambda/{other}-PetsFunction-ABC:log-stream:s",
                            f"log-group:/aws/lambda/{other}/api:log-stream:s",
                            f"log-group:/aws/lambda/CodeDeployHook_{other}-pretraffic:log-stream:s")),
            (f"{own}-AnyRole", "sts:AssumeRole", f"arn:aws:iam::{ACCOUNT}:role/Admin", {}, False, inside),
            (f"{own}-AnyRole", "s3:GetObject", f"arn:aws:s3:::{BUCKET}/builds/x", {}, False, inside),
            (f"{own}-AnyRole", "kms:Decrypt", KEY, {"aws:ResourceTag/petstore-stack": own}, True,
             {**inside, "resourcePolicy": ACCOUNT_KEY["resourcePolicy"]}),
            (f"{own}-AnyRole", "kms:Decrypt", KEY, {"aws:ResourceTag/petstore-stack": other}, False,
             {**inside, "resourcePolicy": ACCOUNT_KEY["resourcePolicy"]}),
        ]
    return cases


# (what the edit loosens, old text, new text): each must fail the check. The
# edit applies to the text's first place (dev comes first).
WORKFLOW = ':job_workflow_ref:${GitHubRepository}/.github/workflows/release.yml@refs/heads/main"'
PIPELINE_COMMENT = (
    "              # The pipeline's own roles (this stack's: <its name>-<LogicalId>-...)\n"
    "              # match prod's names when the pipeline stack is named after prod\n"
    "              # (petstore-pipeline): none is changed, passed or re-tagged by a\n"
    "              # change set, boundary or not, nor are the boundaries.\n")
MUTATIONS = [
    ("dev trust: any ref of the repository",
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:ref:refs/heads/main' + WORKFLOW,
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:*"'),
    ("dev trust: no sub condition",
     '                "token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:ref:refs/heads/main'
     + WORKFLOW + '\n', ""),
    ("prod trust: a v tag, as before",
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:environment:prod' + WORKFLOW,
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:ref:refs/tags/v1.4.0' + WORKFLOW),
    ("prod trust: any workflow of any ref (the subject's workflow a wildcard)",
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:environment:prod' + WORKFLOW,
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:environment:prod:*"'),
    ("prod trust: the environment alone, trusting a job_workflow_ref key AWS may not expose",
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:environment:prod' + WORKFLOW,
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:environment:prod"'),
    ("prod trust: no audience",
     '                "token.actions.githubusercontent.com:aud": sts.amazonaws.com\n'
     '                "token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:environment:prod',
     '                "token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:environment:prod'),
    ("dev scope: every stack",
     '!Sub "arn:${AWS::Partition}:cloudformation:${AWS::Region}:${AWS::AccountId}:stack/${ProdStackName}-dev/*"\n'
     '                # A change',
     '"*"\n                # A change'),
    ("dev scope: any role passed",
     "                Action: iam:PassRole\n                Resource: !GetAtt DevExecutionRole.Arn\n",
     '                Action: iam:PassRole\n                Resource: "*"\n'),
    ("builds overwritable",
     '            Action: s3:PutObject\n            Resource: !Sub "${ArtifactBucket.Arn}/builds/*"',
     '            Action: s3:PutObject\n            Resource: !Sub "${ArtifactBucket.Arn}/deploys/*"'),
    ("builds written by any principal",
     '              ArnNotEquals: { "aws:PrincipalArn": !GetAtt BuildPublishRole.Arn }',
     '              ArnEquals: { "aws:PrincipalArn": !GetAtt BuildPublishRole.Arn }'),
    ("publisher trust: main's run without the environment build",
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:environment:build' + WORKFLOW,
     '"token.actions.githubusercontent.com:sub": !Sub "repo:${GitHubRepository}:ref:refs/heads/main' + WORKFLOW),
    ("execution role: roles without the boundary",
     "                Condition:\n                  StringEquals: { iam:PermissionsBoundary: !Ref DevBoundary }\n"
     "              - Sid: NamedManagedPolicies", "              - Sid: NamedManagedPolicies"),
    ("execution role: any managed policy",
     "                  ArnEquals:\n                    iam:PolicyARN:\n", "                  ArnLike:\n"
     "                    iam:PolicyARN:\n                      - arn:aws:iam::aws:policy/*\n"),
    ("dev execution role: prod's functions too",
     'function:${ProdStackName}-dev-*"\n                  # The pre-traffic hook',
     'function:${ProdStackName}-*"\n                  # The pre-traffic hook'),
    ("prod execution role: dev's names not denied", "              - Sid: NotTheDevStage\n                Effect: Deny",
     "              - Sid: NotTheDevStage\n                Effect: Allow"),
    ("dev boundary: every table", 'table/${ProdStackName}-dev-*"', 'table/*"'),
    ("execution role: another stage's key re-tagged into reach",
     '              - Sid: NoOtherStagesKey\n                Effect: Deny',
     '              - Sid: NoOtherStagesKey\n                Effect: Allow'),
    ("dev boundary: every stage's key",
     '            Condition:\n              StringEquals: { "aws:ResourceTag/petstore-stack": !Sub "${ProdStackName}-dev" }\n',
     ''),
    ("prod boundary: dev's names not denied", "          - Sid: NotTheDevStage\n            Effect: Deny",
     "          - Sid: NotTheDevStage\n            Effect: Allow"),
    ("execution role: a role's trust changed without the boundary",
     "                Action: [iam:UpdateAssumeRolePolicy, iam:DeleteRole]\n"
     '                Resource: !Sub "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/${ProdStackName}-dev-*"\n'
     "                Condition:\n                  StringEquals: { iam:PermissionsBoundary: !Ref DevBoundary }\n",
     "                Action: [iam:UpdateAssumeRolePolicy, iam:DeleteRole]\n"
     '                Resource: !Sub "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/${ProdStackName}-dev-*"\n'),
    ("prod execution role: the pipeline's roles not denied",
     'role/${ProdStackName}-*"\n                Condition:\n                  StringEquals:\n'
     "                    iam:PassedToService: [lambda.amazonaws.com, codedeploy.amazonaws.com]\n"
     + PIPELINE_COMMENT + "              - Sid: NotThePipelinesRoles\n                Effect: Deny",
     'role/${ProdStackName}-*"\n                Condition:\n                  StringEquals:\n'
     "                    iam:PassedToService: [lambda.amazonaws.com, codedeploy.amazonaws.com]\n"
     + PIPELINE_COMMENT + "              - Sid: NotThePipelinesRoles\n                Effect: Allow"),
    ("prod boundary: dev's log groups not denied, as before",
     '              - !Sub "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:/aws/lambda/'
     '${ProdStackName}-dev-*"\n              - !Sub "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:'
     'log-group:/aws/lambda/CodeDeployHook_${ProdStackName}-dev-*"\n\n', "\n"),
    ("execution role: tags on any function of the account, as before",
     "                Action: [lambda:TagResource, lambda:UntagResource]\n"
     '                Resource: !Sub "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:event-source-mapping:*"',
     '                Action: [lambda:TagResource, lambda:UntagResource]\n                Resource: "*"'),
    ("dev execution role: every custom domain, as before", '::/domainnames/${DevDomainName}/*"', '::/domainnames/*"'),
    ("dev execution role: records in every zone", 'hostedzone/${DevHostedZoneId}"', 'hostedzone/*"'),
    ("dev execution role: any record name in its zone",
     '                    "ForAllValues:StringEquals":\n'
     '                      route53:ChangeResourceRecordSetsNormalizedRecordNames: [!Ref DevDomainName]\n', ""),
    ("dev execution role: prod's front and API not denied", "              - Sid: NoOtherStagesEdge\n                Effect: Deny",
     "              - Sid: NoOtherStagesEdge\n                Effect: Allow"),
    ("dev execution role: prod's front re-tagged as dev's",
     "              - Sid: NoOtherStagesEdge\n                Effect: Deny\n                Action: [\"cloudfront:*\", \"apigateway:*\"]",
     "              - Sid: NoOtherStagesEdge\n                Effect: Deny\n                Action: [\"cloudfront:UpdateDistribution\", \"apigateway:*\"]"),
]

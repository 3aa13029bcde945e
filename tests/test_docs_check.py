"""scripts/docs_check.py's reading of a DOM and of links, without a browser."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("docs_check", ROOT / "scripts" / "docs_check.py")
docs_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(docs_check)


def element(name, *children, shadow=(), **attrs):
    """A node as DOM.getDocument(pierce=True) returns it."""
    flat = [item for key, value in attrs.items() for item in (key.rstrip("_"), value)]
    node = {"nodeType": 1, "localName": name, "attributes": flat, "children": list(children)}
    if shadow:
        node["shadowRoots"] = [{"nodeType": 11, "children": list(shadow)}]
    return node


def text(value):
    return {"nodeType": 3, "nodeValue": value}


def document(*body):
    head = element("head", element("title", text("Stage 4 - minidynamo")))
    return {"nodeType": 9, "children": [element("html", head, element("body", *body))]}


def test_read_page_finds_title_ids_links_and_diagrams():
    drawn = element("div", class_="mermaid", shadow=[element("svg", element("g", id="n1"))])
    source = element("pre", element("code", text("flowchart LR\n  A -->")), class_="mermaid")
    page = docs_check.read_page(
        document(
            element("h1", text("FX graphs"), id="fx-graphs"),
            element("a", text("next"), href="../stage5_inductor_cpp/#the-ir"),
            drawn,
            source,
        )
    )
    assert page.title == "Stage 4 - minidynamo"
    assert page.h1 == "FX graphs"
    assert page.ids == {"fx-graphs"}  # not the diagram's own ids
    assert page.links == ["../stage5_inductor_cpp/#the-ir"]
    assert page.diagrams[0] == ""
    assert "not drawn" in page.diagrams[1]
    assert "A -->" in page.diagrams[1]


def test_mermaid_error_picture_is_a_problem():
    bomb = element("svg", element("style", text(".error{}")), element("text", text("Syntax error")))
    page = docs_check.read_page(document(element("div", bomb, id="d__mermaid_0")))
    assert page.problems == ["Mermaid drew its 'Syntax error in text' picture"]


def test_link_target_resolves_relative_links_and_skips_other_sites():
    assert docs_check.link_target("/stage4_fx/", "../stage5_inductor_cpp/#the-ir") == (
        "/stage5_inductor_cpp/",
        "the-ir",
    )
    assert docs_check.link_target("/stage4_fx/", "#graph-breaks") == ("/stage4_fx/", "graph-breaks")
    assert docs_check.link_target("/", "stage4_fx/index.html") == ("/stage4_fx/", "")
    assert docs_check.link_target("/", "https://pytorch.org/docs/") is None
    assert docs_check.link_target("/", "mailto:someone@example.org") is None


def test_link_problem_needs_the_page_and_the_anchor(tmp_path):
    (tmp_path / "objects.inv").write_text("")
    pages = {"/": docs_check.Page(ids={"top"}), "/stage4_fx/": docs_check.Page(ids={"fx"})}
    assert docs_check.link_problem(pages, tmp_path, "/", "stage4_fx/#fx") == ""
    assert docs_check.link_problem(pages, tmp_path, "/", "objects.inv") == ""
    assert docs_check.link_problem(pages, tmp_path, "/", "#") == ""
    assert docs_check.link_problem(pages, tmp_path, "/", "stage4_fx/#nope") == (
        "no id #nope in /stage4_fx/"
    )
    assert docs_check.link_problem(pages, tmp_path, "/", "stage9/") == "no page /stage9/"

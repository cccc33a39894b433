//! PLACEHOLDER (being written): Mermaid and Graphviz renderings of the state graph.

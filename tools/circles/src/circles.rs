//! The circles of a directed graph: its strongly connected components of
//! more than one node (Tarjan's algorithm).

use std::collections::{BTreeMap, BTreeSet};

/// Each set of nodes that reach one another through `edges`, of two nodes or
/// more; nodes sorted within a circle, circles by their first node.
pub fn circles<N: Ord + Clone>(edges: &[(N, N)]) -> Vec<Vec<N>> {
    let mut next: BTreeMap<&N, BTreeSet<&N>> = BTreeMap::new();
    for (from, to) in edges {
        next.entry(from).or_default().insert(to);
        next.entry(to).or_default();
    }
    let mut search = Tarjan {
        next: &next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in next.keys() {
        if !search.index.contains_key(node) {
            search.visit(node);
        }
    }
    let mut found = search.found;
    for circle in &mut found {
        circle.sort();
    }
    found.sort();
    found
}

struct Tarjan<'g, N> {
    next: &'g BTreeMap<&'g N, BTreeSet<&'g N>>,
    index: BTreeMap<&'g N, usize>,
    low: BTreeMap<&'g N, usize>,
    stack: Vec<&'g N>,
    on_stack: BTreeSet<&'g N>,
    found: Vec<Vec<N>>,
}

impl<'g, N: Ord + Clone> Tarjan<'g, N> {
    fn visit(&mut self, node: &'g N) {
        let index = self.index.len();
        self.index.insert(node, index);
        self.low.insert(node, index);
        self.stack.push(node);
        self.on_stack.insert(node);
        for &to in &self.next[node] {
            let low = match self.index.get(to) {
                None => {
                    self.visit(to);
                    self.low[to]
                }
                Some(&to_index) if self.on_stack.contains(to) => to_index,
                Some(_) => continue,
            };
            if low < self.low[node] {
                self.low.insert(node, low);
            }
        }
        if self.low[node] == index {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                self.on_stack.remove(member);
                component.push(member.clone());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                self.found.push(component);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::circles;

    #[test]
    fn a_pair_a_ring_and_a_self_loop() {
        let edges = [
            ("a", "b"),
            ("b", "a"),
            ("c", "d"),
            ("d", "e"),
            ("e", "c"),
            ("e", "f"),
            ("f", "f"),
            ("g", "a"),
        ];
        assert_eq!(circles(&edges), vec![vec!["a", "b"], vec!["c", "d", "e"]]);
    }

    #[test]
    fn a_tree_with_a_shared_leaf_has_none() {
        let edges = [("root", "a"), ("root", "b"), ("a", "leaf"), ("b", "leaf")];
        assert!(circles(&edges).is_empty());
    }
}

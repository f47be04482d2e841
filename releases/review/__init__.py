"""The reviewer's side of a release: its review document, and the decision on its budget."""

"""Row-level DML on Delta tables: DELETE, UPDATE (and MERGE), copy-on-write or with deletion vectors.

``common`` holds the machinery they share; see its docstring for the steps.
"""

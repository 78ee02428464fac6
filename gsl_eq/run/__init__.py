"""Running work within limits: the limits both modes honour and why a run stopped
(:mod:`.limits`), a computation under a hard time bound in a forked process (:mod:`.bounded`), many
independent jobs as Ray tasks (:mod:`.cluster`), and what calling a rule runs (:mod:`.executors`).

Nothing here knows graphs or rules; importing this package loads nothing heavy (Ray only inside
:mod:`.cluster`'s functions).
"""

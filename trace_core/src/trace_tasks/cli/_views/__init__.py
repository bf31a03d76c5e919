"""What explain, report, validate and audit show, shared so that no command imports another.

The explanation sections (``sections``) and their safe formatters
(``explanation``), the picture with its image checks (``drawing``) and its
label layout (``layout``), coordinate frames (``frames``), the reward
breakdown (``breakdown``), and the image-blind audit (``audit``).
"""

"""What explain, report and validate show: the explanation text, the drawing and its label layout, frames, the breakdown."""

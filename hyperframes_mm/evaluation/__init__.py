from .predictions import accuracy_by_group, class_groups_of

__all__ = ['accuracy_by_group', 'class_groups_of']
